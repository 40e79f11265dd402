"""Load a bundle for review (the TUI, the store and ``codebox artifacts show``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from codebox_tui.bundle import layout
from codebox_tui.bundle.documents import validate_document
from codebox_tui.bundle.patchparse import line_counts
from codebox_tui.bundle.safe_read import MAX_JSON_BYTES, load_json_file, parse_json, read_regular
from codebox_tui.bundle.verify import verify_bundle
from codebox_tui.contracts.bundle import (
    CHANGED_FILES_SCHEMA,
    REVIEW_SCHEMA,
    TEST_RESULTS_SCHEMA,
    BundleVerification,
    ChangedFile,
    ChangedFilesListing,
    TestResults,
)
from codebox_tui.contracts.bundle_read import ManifestFileView, ManifestView, MetadataView, ReviewView, SkippedView
from codebox_tui.contracts.site_state import SITE_STATE_DIFF_SCHEMA, SiteStateDiff
from codebox_tui.errors import BadInputError


@dataclass
class LoadedBundle:
    """A bundle as the review surfaces show it. The change list and test results are parsed with their contract
    models (codebox_tui/contracts/bundle.py), strictly; the manifest, review and metadata with the tolerant read
    views (codebox_tui/contracts/bundle_read.py), because a bundle that fails verification (or a
    reference-written review with fewer keys than Codebox writes) is still shown, with its violations: a field
    of the wrong type reads as its default and is listed in ``read_problems``."""

    path: Path
    manifest: ManifestView
    review: ReviewView
    metadata: MetadataView
    changed_files: list[ChangedFile]
    skipped: list[SkippedView]
    patch: str
    test_results: TestResults
    verification: BundleVerification
    evidence: list[ManifestFileView] = field(default_factory=list)
    # files/site-state-diff.json (docs/site-state.md): None when the bundle has none or it is unreadable
    # (``site_state_problem`` says why; the verifier reports it as a violation too)
    site_state: SiteStateDiff | None = None
    site_state_problem: str | None = None
    # what the read views could not read as declared, each as ``<file>: <field>: <problem>``
    read_problems: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.manifest.id

    @property
    def valid(self) -> bool:
        return self.verification.valid

    @property
    def risk_flags(self) -> list[str]:
        return list(self.review.riskFlags)


def _json(path: Path, what: str, expected_schema: str | None = None, required: bool = True) -> dict[str, object]:
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


def _with_line_counts(files: list[ChangedFile], patch: str) -> list[ChangedFile]:
    """Changed-file entries as the Review screen and ``artifacts show`` expect them. Bundles written by the
    reference carry no ``additions``/``deletions``/``binary`` (only Codebox's writer adds them), so they are
    derived from the bundle's own patch instead of showing ``+0 -0``."""
    if all({"additions", "deletions"} <= f.model_fields_set for f in files):
        return files
    counts = patch_line_counts(patch)
    result: list[ChangedFile] = []
    for entry in files:
        if not {"additions", "deletions"} <= entry.model_fields_set:
            # mount-relative headers (the reference since 2026-07-14) or the sandbox path without its leading
            # slash (older reference releases: ``diff --git a/wordpress/wp-content/plugins/x/f.php ...``)
            found = counts.get(entry.relativePath) or counts.get(entry.path.lstrip("/"))
            adds, dels, binary = found or (0, 0, False)
            derived = {"additions": adds, "deletions": dels}
            if "binary" not in entry.model_fields_set:
                derived["binary"] = binary
            entry = entry.model_copy(update=derived)
        result.append(entry)
    return result


APPLY_STAGING_FLAG = "apply-staging-folder-in-mount"
_APPLY_STAGING = ".codebox-apply"  # the directory apply's staging folder (store/journal.py)


def _with_derived_risk_flags(review: ReviewView, files: list[ChangedFile], skipped: list[SkippedView]) -> ReviewView:
    """Risk flags that follow from the bundle's own change list, shown even when a bundle (a foreign or
    older one) does not record them: a ``.codebox-apply`` folder in a mount is how a sandbox would try to
    plant an apply journal (apply refuses such a target; docs/security-host.md)."""
    names = [f.relativePath for f in files] + [entry.name for entry in skipped]
    if not any(_APPLY_STAGING in name.split("/") for name in names):
        return review
    if APPLY_STAGING_FLAG in review.riskFlags:
        return review
    return review.model_copy(update={"riskFlags": sorted([*review.riskFlags, APPLY_STAGING_FLAG])})


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


def _read_patch(root: Path) -> str:
    # bytes (read_regular), not read_text(): universal newlines would turn a carriage return inside a line
    # into a line break
    patch_path = root / layout.PATCH
    try:
        return read_regular(patch_path).decode("utf-8", errors="replace") if os.path.lexists(patch_path) else ""
    except OSError as error:
        raise BadInputError(
            f"{layout.PATCH} cannot be read: {error}", code="malformed-bundle", field=layout.PATCH
        ) from error


def _site_state(root: Path) -> tuple[SiteStateDiff | None, str | None]:
    """The bundle's site-state diff, if it has one; a malformed one is a problem text, not an error (the rest
    of the bundle is still shown)."""
    if not os.path.lexists(root / layout.SITE_STATE_DIFF):
        return None, None
    try:
        doc = _json(root / layout.SITE_STATE_DIFF, layout.SITE_STATE_DIFF, SITE_STATE_DIFF_SCHEMA)
        return validate_document(SiteStateDiff, doc, layout.SITE_STATE_DIFF), None
    except BadInputError as error:
        return None, error.message


def load_bundle(bundle_dir: Path | str) -> LoadedBundle:
    """Verify and read a bundle. Every document is read as a regular, size- and depth-limited file; the change
    list and the test results must satisfy their contract models (a bad one is a BadInputError naming the file
    and field)."""
    root = find_bundle_dir(Path(bundle_dir))
    verification = verify_bundle(root)
    manifest = ManifestView.read(_json(root / layout.MANIFEST, layout.MANIFEST))
    review = ReviewView.read(_json(root / layout.REVIEW, layout.REVIEW, REVIEW_SCHEMA, required=False))
    changed = validate_document(
        ChangedFilesListing,
        _json(root / layout.CHANGED_FILES, layout.CHANGED_FILES, CHANGED_FILES_SCHEMA, required=False),
        layout.CHANGED_FILES,
    )
    tests = validate_document(
        TestResults,
        _json(root / layout.TEST_RESULTS, layout.TEST_RESULTS, TEST_RESULTS_SCHEMA, required=False),
        layout.TEST_RESULTS,
    )
    metadata = MetadataView.read(_json(root / layout.METADATA, layout.METADATA, required=False))
    patch = _read_patch(root)
    files = _with_line_counts(changed.files, patch)
    review = _with_derived_risk_flags(review, files, changed.skipped)
    site_state, site_state_problem = _site_state(root)
    evidence = [f for f in manifest.files if f.path.startswith(layout.VIEWABLE_EVIDENCE_PREFIXES)]
    problems = [f"{layout.MANIFEST}: {p}" for p in manifest.read_problems()]
    problems += [f"{layout.REVIEW}: {p}" for p in review.read_problems()]
    problems += [f"{layout.METADATA}: {p}" for p in metadata.read_problems()]
    problems += [
        f"{layout.CHANGED_FILES}: skipped[{i}].{p}"
        for i, entry in enumerate(changed.skipped)
        for p in entry.read_problems()
    ]
    return LoadedBundle(
        path=root,
        manifest=manifest,
        review=review,
        metadata=metadata,
        changed_files=files,
        skipped=changed.skipped,
        patch=patch,
        test_results=tests,
        verification=verification,
        evidence=evidence,
        site_state=site_state,
        site_state_problem=site_state_problem,
        read_problems=problems,
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
            return ManifestView.read(manifest).createdAt or ""
        except (OSError, BadInputError):
            return ""

    return sorted(set(found), key=lambda p: (created(p), str(p)), reverse=True)
