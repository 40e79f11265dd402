"""Loading a bundle written by the reference for the Review screen and ``codebox artifacts show``.

The reference's changed-files entries carry no ``additions``/``deletions``/``binary`` (spec §4.2); the reader
derives them from the bundle's patch, and leaves Codebox's own counts alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codebox_tui.bundle.reader import load_bundle, patch_line_counts
from tests.factories.reference_bundle import REFERENCE_PATCH

# A patch in the reference's format (spec §4.3): mount-relative headers, no index lines, counts always printed,
# a blank line between blocks.


def _entry(rel: str, status: str) -> dict[str, object]:
    return {
        "path": f"/wordpress/wp-content/plugins/p/{rel}",
        "relativePath": rel,
        "status": status,
        "mountIndex": 0,
        "mountTarget": "/wordpress/wp-content/plugins/p",
        "patchPath": "files/diffs/mount-0.patch",
    }


def test_patch_line_counts_count_only_hunk_lines() -> None:
    counts = patch_line_counts(REFERENCE_PATCH)
    assert counts == {"includes/new.php": (2, 0, False), "old.txt": (0, 1, False), "plugin.php": (1, 1, False)}


def test_patch_line_counts_flag_binary_blocks() -> None:
    patch = (
        "diff --git a/logo.png b/logo.png\nindex 1..2 100644\nGIT binary patch\nliteral 3\nKcmZ>\n\nliteral 0\n"
        "diff --git a/x.bin b/x.bin\nBinary files a/x.bin and b/x.bin differ\n"
    )
    assert patch_line_counts(patch) == {"logo.png": (0, 0, True), "x.bin": (0, 0, True)}


def test_reference_bundle_gets_counts_from_its_patch(tmp_path: Path) -> None:
    (tmp_path / "files").mkdir()
    (tmp_path / "manifest.json").write_text(json.dumps({"id": "x", "files": []}))
    changed = {
        "schema": "wp-codebox/changed-files/v1",
        "files": [_entry("includes/new.php", "added"), _entry("old.txt", "deleted"), _entry("plugin.php", "modified")],
    }
    (tmp_path / "files/changed-files.json").write_text(json.dumps(changed))
    (tmp_path / "files/patch.diff").write_text(REFERENCE_PATCH)
    loaded = load_bundle(tmp_path)
    got = {f.relativePath: (f.additions, f.deletions, f.binary) for f in loaded.changed_files}
    assert got == {"includes/new.php": (2, 0, False), "old.txt": (0, 1, False), "plugin.php": (1, 1, False)}
    assert loaded.changed_files[0].path == "/wordpress/wp-content/plugins/p/includes/new.php"  # rest untouched


def test_codebox_counts_are_kept(tmp_path: Path) -> None:
    (tmp_path / "files").mkdir()
    (tmp_path / "manifest.json").write_text(json.dumps({"id": "x", "files": []}))
    entry = {**_entry("plugin.php", "modified"), "additions": 7, "deletions": 9, "binary": False}
    (tmp_path / "files/changed-files.json").write_text(json.dumps({"files": [entry]}))
    (tmp_path / "files/patch.diff").write_text(REFERENCE_PATCH)
    assert [f.model_dump(mode="json", exclude_unset=True) for f in load_bundle(tmp_path).changed_files] == [entry]


def test_older_reference_headers_with_the_sandbox_path_are_matched(tmp_path: Path) -> None:
    """Reference releases before mount-relative headers wrote ``a/wordpress/wp-content/plugins/p/<rel>``."""
    (tmp_path / "files").mkdir()
    (tmp_path / "manifest.json").write_text(json.dumps({"id": "x", "files": []}))
    patch = REFERENCE_PATCH.replace("a/", "a/wordpress/wp-content/plugins/p/").replace(
        "b/", "b/wordpress/wp-content/plugins/p/"
    )
    (tmp_path / "files/changed-files.json").write_text(
        json.dumps({"files": [_entry("plugin.php", "modified"), _entry("old.txt", "deleted")]})
    )
    (tmp_path / "files/patch.diff").write_text(patch)
    got = {f.relativePath: (f.additions, f.deletions) for f in load_bundle(tmp_path).changed_files}
    assert got == {"plugin.php": (1, 1), "old.txt": (0, 1)}


def test_a_hostile_change_list_fails_closed_naming_the_file_and_field(tmp_path: Path) -> None:
    """The reader parses changed-files.json with the ChangedFile contract: an entry the contract does not allow
    is a clear error naming the file and the field, never a half-read change list."""
    from codebox_tui.errors import BadInputError

    (tmp_path / "files").mkdir()
    (tmp_path / "manifest.json").write_text(json.dumps({"id": "x", "files": []}))
    (tmp_path / "files/patch.diff").write_text(REFERENCE_PATCH)
    for bad, field in (
        (dict(_entry("plugin.php", "renamed")), "files[0].status"),
        ({**_entry("plugin.php", "modified"), "mountIndex": "zero"}, "files[0].mountIndex"),
        ({k: v for k, v in _entry("plugin.php", "modified").items() if k != "relativePath"}, "files[0].relativePath"),
    ):
        (tmp_path / "files/changed-files.json").write_text(json.dumps({"files": [bad]}))
        with pytest.raises(BadInputError) as caught:
            load_bundle(tmp_path)
        assert caught.value.field == f"files/changed-files.json:{field}"
        assert str(caught.value).startswith(f"files/changed-files.json:{field}: ")
