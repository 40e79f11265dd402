"""Load a bundle for review (the TUI, the store and ``codebox artifacts show``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    if not path.is_file():
        if required:
            raise BadInputError(f"{what} is missing: {path}", code="malformed-bundle", field=str(path.name))
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise BadInputError(
            f"{what} is not valid JSON ({path}): {error}", code="malformed-bundle", field=str(path)
        ) from error
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


def find_bundle_dir(path: Path) -> Path:
    path = Path(path)
    if not path.exists():
        raise BadInputError(f"No bundle at {path}", code="missing-bundle", field="bundle")
    if path.is_file() and path.name == "manifest.json":
        return path.parent
    if not (path / "manifest.json").is_file():
        raise BadInputError(
            f"{path} has no manifest.json (not an artifact bundle)", code="missing-manifest", field="bundle"
        )
    return path


def load_bundle(bundle_dir: Path | str) -> LoadedBundle:
    root = find_bundle_dir(Path(bundle_dir))
    verification = verify_bundle(root)
    manifest = _json(root / "manifest.json", "manifest.json")
    review = _json(root / "files" / "review.json", "files/review.json", "wp-codebox/artifact-review/v1", required=False)
    changed = _json(
        root / "files" / "changed-files.json", "files/changed-files.json", "wp-codebox/changed-files/v1", required=False
    )
    tests = _json(
        root / "files" / "test-results.json", "files/test-results.json", "wp-codebox/test-results/v1", required=False
    )
    metadata = _json(root / "metadata.json", "metadata.json", required=False)
    patch_path = root / "files" / "patch.diff"
    patch = patch_path.read_text(encoding="utf-8", errors="replace") if patch_path.is_file() else ""
    files = changed.get("files", [])
    if not isinstance(files, list):
        raise BadInputError(
            "files/changed-files.json: files must be an array",
            code="malformed-bundle",
            field="files/changed-files.json:files",
        )
    evidence = [
        f
        for f in manifest.get("files", [])
        if isinstance(f, dict) and str(f.get("path", "")).startswith(("files/browser/", "files/phpunit/"))
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
    for depth in ("manifest.json", "*/manifest.json", "*/*/manifest.json", "*/*/*/manifest.json"):
        found.extend(p.parent for p in root.glob(depth) if p.is_file())

    def created(path: Path) -> str:
        try:
            return str(json.loads((path / "manifest.json").read_text()).get("createdAt", ""))
        except (OSError, ValueError):
            return ""

    return sorted(set(found), key=lambda p: (created(p), str(p)), reverse=True)
