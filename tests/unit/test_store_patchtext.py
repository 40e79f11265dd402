"""Patch splitting, approval filtering and exact application, checked against real ``git diff``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.patchtext import PatchError, apply_block, filter_patch, normalize_patch_path, split_blocks


def git_diff(tmp_path: Path, before: bytes | None, after: bytes | None, name: str = "f.txt") -> bytes:
    a = tmp_path / "a"
    b = tmp_path / "b"
    for side, data in ((a, before), (b, after)):
        side.mkdir(exist_ok=True)
        if data is not None:
            (side / name).write_bytes(data)
    out = subprocess.run(
        ["git", "diff", "--no-index", "--no-color", "--src-prefix=a/", "--dst-prefix=b/", "a", "b"],
        cwd=tmp_path,
        capture_output=True,
        check=False,
    )
    assert out.returncode == 1, out.stderr
    # git names the sides a/a/f.txt and b/b/f.txt; rewrite to mount-relative names
    return out.stdout.replace(b"a/a/", b"a/").replace(b"b/b/", b"b/")


CASES = [
    (b"one\ntwo\nthree\n", b"one\n2\nthree\n"),
    (b"one\ntwo\nthree", b"one\ntwo\nthree\nfour"),  # no newline at end, both sides
    (b"one\ntwo\n", b"one\ntwo"),  # newline removed at end
    (b"x\r\ny\r\nz\r\n", b"x\r\nY\r\nz\r\n"),  # CRLF kept exactly
    (b"a\rb\nc\n", b"a\rb\nC\n"),  # a lone CR is content
    (
        b"".join(b"line %d\n" % i for i in range(100)),
        b"".join(b"line %d\n" % (i * (i % 7 != 3)) for i in range(100)),
    ),
    (None, b"new file\nsecond\n"),
    (b"gone\n", None),
    (b"", b"now has text\n"),
]


@pytest.mark.parametrize(("before", "after"), CASES)
def test_apply_block_reproduces_git_diff_exactly(tmp_path: Path, before: bytes | None, after: bytes | None) -> None:
    patch = git_diff(tmp_path, before, after)
    [block] = split_blocks(patch)
    assert block.paths == {"f.txt"}
    result = apply_block(before, block.text)
    assert result == (after or b"")
    # backwards, the after side gives the before side back (store/threeway.py recovers baselines so)
    assert apply_block(after, block.text, reverse=True) == (before or b"")


def test_apply_block_refuses_a_file_that_changed(tmp_path: Path) -> None:
    patch = git_diff(tmp_path, b"one\ntwo\nthree\n", b"one\n2\nthree\n")
    with pytest.raises(PatchError, match="does not match"):
        apply_block(b"one\nTWO\nthree\n", split_blocks(patch)[0].text)


def test_filter_keeps_only_approved_blocks_unchanged() -> None:
    blocks = [
        b"diff --git a/x.php b/x.php\n--- a/x.php\n+++ b/x.php\n@@ -1,1 +1,1 @@\n-a\n+b\n",
        b"diff --git a/y.php b/y.php\nnew file mode 100644\n--- /dev/null\n+++ b/y.php\n@@ -0,0 +1,1 @@\n+y\n",
        b"diff --git a/z.php b/z.php\n--- a/z.php\n+++ b/z.php\n@@ -1,1 +1,1 @@\n-c\n+d\n",
    ]
    patch = b"\n".join(blocks)
    kept, by_file = filter_patch(
        patch, {"z.php": {"z.php", "/wordpress/wp-content/plugins/p/z.php"}, "y.php": {"y.php"}}
    )
    assert b"x.php" not in kept
    assert by_file["y.php"].text.startswith(b"diff --git a/y.php")
    assert by_file["z.php"].text == blocks[2]
    with pytest.raises(PatchError, match="no block for approved file"):
        filter_patch(patch, {"nope.php": {"nope.php"}})


def test_normalize_patch_path() -> None:
    assert normalize_patch_path(" b/dir\\f.php\t2020") == "dir/f.php"
    assert normalize_patch_path("/dev/null") is None
    assert normalize_patch_path("/abs/p") == "abs/p"


_line = st.sampled_from([b"a", b"b", b"c", b"", b"  x", b"\tfn();", b"a\r"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    before=st.lists(_line, max_size=30),
    after=st.lists(_line, max_size=30),
    end_before=st.booleans(),
    end_after=st.booleans(),
)
def test_apply_block_matches_git_for_random_edits(
    tmp_path_factory: pytest.TempPathFactory,
    before: list[bytes],
    after: list[bytes],
    end_before: bool,
    end_after: bool,
) -> None:
    old = b"\n".join(before) + (b"\n" if end_before and before else b"")
    new = b"\n".join(after) + (b"\n" if end_after and after else b"")
    if old == new:
        return
    patch = git_diff(tmp_path_factory.mktemp("d"), old, new)
    [block] = split_blocks(patch)
    assert apply_block(old, block.text) == new
    assert apply_block(new, block.text, reverse=True) == old


def test_blocks_keep_non_utf8_bytes_and_names_with_spaces(tmp_path: Path) -> None:
    before, after = b"caf\xe9\nsame\n", b"caf\xe9 au lait\nsame\n"
    patch = git_diff(tmp_path, before, after, name="my file.php")
    [block] = split_blocks(patch)
    assert block.text == patch
    assert block.paths == {"my file.php"}
    assert apply_block(before, block.text) == after
    kept, by_file = filter_patch(patch, {"my file.php": {"my file.php"}})
    assert kept == patch and by_file["my file.php"] == block


def test_a_hunk_shorter_than_its_header_is_refused() -> None:
    block = b"diff --git a/x.php b/x.php\n--- a/x.php\n+++ b/x.php\n@@ -1,3 +1,3 @@\n-a\n+b\n"
    with pytest.raises(PatchError, match="cannot be read"):
        apply_block(b"a\nc\nd\n", block)
