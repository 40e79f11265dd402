"""The one rule for which changed file a name means (store/changed_names.py) and how a name two mounts
share picks its patch block (store/patchtext.py::filter_patch). The end-to-end attack is
tests/security/test_ambiguous_file_names.py."""

from __future__ import annotations

import pytest

from codebox_tui.contracts.bundle import ChangedFile
from store.changed_names import AmbiguousFileName, ChangedFileNames
from store.patchtext import PatchError, filter_patch

FIRST, SECOND = "/wordpress/wp-content/plugins/first", "/wordpress/wp-content/plugins/second"


def entry(mount: int, target: str, rel: str) -> ChangedFile:
    return ChangedFile(
        path=f"{target}/{rel}",
        relativePath=rel,
        status="modified",
        mountIndex=mount,
        mountTarget=target,
        patchPath=f"files/diffs/mount-{mount}.patch",
    )


def block(rel: str, word: str) -> bytes:
    return (f"diff --git a/{rel} b/{rel}\n--- a/{rel}\n+++ b/{rel}\n@@ -1 +1 @@\n-old\n+{word}\n").encode()


ENTRIES = [entry(0, FIRST, "readme.txt"), entry(0, FIRST, "only-first.php"), entry(1, SECOND, "readme.txt")]


def test_sandbox_paths_and_unique_relative_paths_resolve() -> None:
    names = ChangedFileNames(ENTRIES)
    assert names.find(f"{SECOND}/readme.txt") is ENTRIES[2]
    assert names.find(f"{SECOND}/readme.txt".lstrip("/")) is ENTRIES[2]
    assert names.find("only-first.php") is ENTRIES[1]
    assert names.find("nope.txt") is None
    assert names.occurrence(ENTRIES[1]) is None
    assert [names.occurrence(e) for e in (ENTRIES[0], ENTRIES[2])] == [(0, 2), (1, 2)]
    assert names.shown_name(ENTRIES[0]) == f"{FIRST}/readme.txt" and names.shown_name(ENTRIES[1]) == "only-first.php"


def test_a_relative_path_two_mounts_share_is_refused_naming_both() -> None:
    with pytest.raises(AmbiguousFileName) as info:
        ChangedFileNames(ENTRIES).find("readme.txt")
    assert info.value.code == "file-name-ambiguous" and info.value.exit_code == 2
    assert info.value.details["candidates"] == [f"{FIRST}/readme.txt", f"{SECOND}/readme.txt"]
    assert f"{FIRST}/readme.txt" in info.value.message and f"{SECOND}/readme.txt" in info.value.message


def test_a_shared_name_takes_its_block_by_mount_order() -> None:
    patch = block("readme.txt", "first") + block("only-first.php", "x") + block("readme.txt", "second")
    kept, blocks = filter_patch(
        patch, {"readme.txt": {"readme.txt", f"{SECOND}/readme.txt"}}, occurrences={"readme.txt": (1, 2)}
    )
    assert kept == block("readme.txt", "second") and b"+second" in blocks["readme.txt"].text
    kept, _ = filter_patch(patch, {"readme.txt": {"readme.txt"}}, occurrences={"readme.txt": (0, 2)})
    assert kept == block("readme.txt", "first")


def test_a_patch_with_another_number_of_shared_blocks_is_refused() -> None:
    with pytest.raises(PatchError, match="1 block"):
        filter_patch(block("readme.txt", "first"), {"readme.txt": {"readme.txt"}}, occurrences={"readme.txt": (1, 2)})
    with pytest.raises(PatchError, match="more than one block"):  # without the rule, two blocks are refused
        filter_patch(block("readme.txt", "a") + block("readme.txt", "b"), {"readme.txt": {"readme.txt"}})
