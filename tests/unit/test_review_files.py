"""The Review screen's file keys (codebox_tui/screens/review_files.py): one key per changed file, a relative
path two mounts share keyed by sandbox path, and each file's own patch block (pure logic, no Textual)."""

from __future__ import annotations

from codebox_tui.contracts.bundle import ChangedFile
from codebox_tui.screens.review_files import ReviewFiles

FIRST = "/wordpress/wp-content/plugins/first"
SECOND = "/wordpress/wp-content/plugins/second"


def _entry(mount: str, index: int, rel: str) -> ChangedFile:
    return ChangedFile(
        path=f"{mount}/{rel}",
        relativePath=rel,
        status="modified",
        mountIndex=index,
        mountTarget=mount,
        patchPath="files/patch.diff",
    )


def _block(name: str, word: str) -> str:
    return f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n@@ -1 +1,2 @@\n line\n+{word}\n"


def test_a_relative_path_two_mounts_change_is_two_keys_with_their_own_blocks() -> None:
    entries = [_entry(FIRST, 0, "readme.txt"), _entry(SECOND, 1, "readme.txt"), _entry(FIRST, 0, "main.php")]
    patch = _block("readme.txt", "first") + _block("main.php", "php") + _block("readme.txt", "second")
    files = ReviewFiles(entries, patch)
    assert files.keys == [f"{FIRST}/readme.txt", f"{SECOND}/readme.txt", "main.php"]
    assert "+first" in (files.block(f"{FIRST}/readme.txt") or "")
    assert "+second" in (files.block(f"{SECOND}/readme.txt") or "")
    assert "+php" in (files.block("main.php") or "")
    assert files.key_of(entries[1]) == f"{SECOND}/readme.txt"
    assert [key for key, _block_text in files.shown()] == sorted(files.keys)


def test_a_shared_name_with_a_missing_block_gets_none_never_the_other_mounts() -> None:
    entries = [_entry(FIRST, 0, "readme.txt"), _entry(SECOND, 1, "readme.txt")]
    files = ReviewFiles(entries, _block("readme.txt", "only one"))
    assert files.block(f"{FIRST}/readme.txt") is None and files.block(f"{SECOND}/readme.txt") is None


def test_patches_that_name_files_by_sandbox_path_still_find_each_block() -> None:
    entries = [_entry(FIRST, 0, "readme.txt"), _entry(SECOND, 1, "readme.txt")]
    patch = _block(f"{SECOND.lstrip('/')}/readme.txt", "second") + _block(f"{FIRST.lstrip('/')}/readme.txt", "first")
    files = ReviewFiles(entries, patch)
    assert "+first" in (files.block(f"{FIRST}/readme.txt") or "")
    assert "+second" in (files.block(f"{SECOND}/readme.txt") or "")
