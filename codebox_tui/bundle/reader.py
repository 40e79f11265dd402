"""Load a bundle for review (the TUI, the store and ``codebox artifacts show``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codebox_tui.bundle import layout
from codebox_tui.bundle.patchparse import line_counts
from codebox_tui.bundle.safe_read import MAX_JSON_BYTES, load_json_file, parse_json, read_regular
from codebox_tui.bundle.verify import verify_bundle
from codebox_tui.contracts.bundle import BundleVerification
from codebox_tui.errors import BadInputError


@dataclass
class LoadedBundle:
    path: Path
    manifest: dict[str, Any]
    review: dict[str, Any]
    metadata: dict[str, Any]
    changed_files: list[dict[str, Any]]
    skipped: list[dict[str, Any]]
    patch: str
    test_results: dict[str, Any]
    verification: BundleVerification
    evidence: list[dict[str, Any]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return str(self.manifest.get("id", ""))

    @property
    def valid(self) -> bool:
        return self.verification.valid


def _json(path: Path, what: str, expected_schema: str | None = None, required: bool = True) -> dict[str, Any]:
    if not os.path.lexists(path):
        if required:
            raise BadInputError(f"{what} is missing: {path}", code="malformed-bundle", field=str(path.name))
        return {}
    # regular files only (a FIFO would block), depth-limited JSON: bundle/safe_read.py
    data = load_json_file(path, f"{what} ({path})", code="malformed-bundle")
    if not isinstance(data, dict):
        raise BadInputError(f"{what} must be a JSON object ({path})", code="malformed-bundle", field=str(path))
    # A document without a schema id is accepted (the reference writes bare ``{}`` placeholders); a wrong one is not.
    if expected_schema and "schema" in data and data["schema"] != expected_schema:
        raise BadInputError(
            f"{what} has schema {data.get('schema')!r}, expected {expected_schema!r}",
            code="wrong-schema",
            field=f"{path}:schema",
        )
    return data


def patch_line_counts(patch: str) -> dict[str, tuple[int, int, bool]]:
    """(additions, deletions, binary) per file section, keyed by its path (the old one for deletions); from
    the one patch parser (``patchparse``), so ``---``/``+++`` headers and blank separators never count."""
    return line_counts(patch)


def _with_line_counts(files: list[Any], patch: str) -> list[Any]:
    """Changed-file entries as the Review screen and ``artifacts show`` expect them. Bundles written by the
    reference carry no ``additions``/``deletions``/``binary`` (only Codebox's writer adds them), so they are
    derived from the bundle's own patch instead of showing ``+None -None`` or ``+0 -0``."""
    if all(not isinstance(f, dict) or ("additions" in f and "deletions" in f) for f in files):
        return files
    counts = patch_line_counts(patch)
    result: list[Any] = []
    for entry in files:
        if isinstance(entry, dict) and not ("additions" in entry and "deletions" in entry):
            # mount-relative headers (the reference since 2026-07-14) or the sandbox path without its leading
            # slash (older reference releases: ``diff --git a/wordpress/wp-content/plugins/x/f.php ...``)
            found = counts.get(str(entry.get("relativePath"))) or counts.get(str(entry.get("path", "")).lstrip("/"))
            adds, dels, binary = found or (0, 0, False)
            entry = {"additions": adds, "deletions": dels, "binary": binary, **entry}
        result.append(entry)
    return result


APPLY_STAGING_FLAG = "apply-staging-folder-in-mount"
_APPLY_STAGING = ".codebox-apply"  # the directory apply's staging folder (store/journal.py)


def _with_derived_risk_flags(review: dict[str, Any], files: list[Any], skipped: list[Any]) -> dict[str, Any]:
    """Risk flags that follow from the bundle's own change list, shown even when a bundle (a foreign or
    older one) does not record them: a ``.codebox-apply`` folder in a mount is how a sandbox would try to
    plant an apply journal (apply refuses such a target; docs/security-host.md)."""
    names = [str(entry.get("relativePath") or entry.get("path") or "") for entry in [*files, *skipped]
             if isinstance(entry, dict)]
    if not any(_APPLY_STAGING in name.split("/") for name in names):
        return review
    flags = review.get("riskFlags")
    flags = [str(f) for f in flags] if isinstance(flags, list) else []
    if APPLY_STAGING_FLAG in flags:
        return review
    return {**review, "riskFlags": sorted([*flags, APPLY_STAGING_FLAG])}


def find_bundle_dir(path: Path) -> Path:
    path = Path(path)
    if not path.exists():
        raise BadInputError(f"No bundle at {path}", code="missing-bundle", field="bundle")
    if path.name == layout.MANIFEST and not path.is_dir():
        return path.parent
    if not os.path.lexists(path / layout.MANIFEST):
        raise BadInputError(
            f"{path} has no {layout.MANIFEST} (not an artifact bundle)", code="missing-manifest", field="bundle"
        )
    return path


def load_bundle(bundle_dir: Path | str) -> LoadedBundle:
    root = find_bundle_dir(Path(bundle_dir))
    verification = verify_bundle(root)
    manifest = _json(root / layout.MANIFEST, layout.MANIFEST)
    review = _json(root / layout.REVIEW, layout.REVIEW, "wp-codebox/artifact-review/v1", required=False)
    changed = _json(
        root / layout.CHANGED_FILES, layout.CHANGED_FILES, "wp-codebox/changed-files/v1", required=False
    )
    tests = _json(
        root / layout.TEST_RESULTS, layout.TEST_RESULTS, "wp-codebox/test-results/v1", required=False
    )
    metadata = _json(root / layout.METADATA, layout.METADATA, required=False)
    patch_path = root / layout.PATCH
    # bytes (read_regular), not read_text(): universal newlines would turn a carriage return inside a line
    # into a line break
    try:
        patch = read_regular(patch_path).decode("utf-8", errors="replace") if os.path.lexists(patch_path) else ""
    except OSError as error:
        raise BadInputError(f"{layout.PATCH} cannot be read: {error}", code="malformed-bundle",
                            field=layout.PATCH) from error
    files = changed.get("files", [])
    if not isinstance(files, list):
        raise BadInputError(
            f"{layout.CHANGED_FILES}: files must be an array",
            code="malformed-bundle",
            field=f"{layout.CHANGED_FILES}:files",
        )
    files = _with_line_counts(files, patch)
    review = _with_derived_risk_flags(review, files, list(changed.get("skipped", [])))
    evidence = [
        f
        for f in manifest.get("files", [])
        if isinstance(f, dict) and str(f.get("path", "")).startswith(layout.VIEWABLE_EVIDENCE_PREFIXES)
    ]
    return LoadedBundle(
        path=root,
        manifest=manifest,
        review=review,
        metadata=metadata,
        changed_files=files,
        skipped=list(changed.get("skipped", [])),
        patch=patch,
        test_results=tests,
        verification=verification,
        evidence=evidence,
    )


def find_bundles(root: Path) -> list[Path]:
    """Bundle folders under ``root`` (depth ≤ 3), newest first."""
    root = Path(root)
    found: list[Path] = []
    for depth in range(4):
        found.extend(p.parent for p in root.glob("*/" * depth + layout.MANIFEST) if os.path.lexists(p))

    def created(path: Path) -> str:
        try:
            manifest = parse_json(read_regular(path / layout.MANIFEST, MAX_JSON_BYTES), layout.MANIFEST)
            return str(manifest.get("createdAt", "")) if isinstance(manifest, dict) else ""
        except (OSError, BadInputError):
            return ""

    return sorted(set(found), key=lambda p: (created(p), str(p)), reverse=True)
