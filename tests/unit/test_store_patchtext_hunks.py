"""Single hunks (docs/contracts.md, "Hunk selection"): any subset of a file's hunks applied by Codebox
equals real ``git apply`` of the same subset on the baseline, for random files and random edits."""

from __future__ import annotations

import hashlib
import itertools
import re
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.patchtext import PatchError, apply_block, hunk_hashes, select_hunks, split_blocks, split_hunks

_HEADER = re.compile(rb"^@@ -(\d+),(\d+) \+(\d+),(\d+) @@", re.MULTILINE)


def git_diff(work: Path, before: bytes, after: bytes, context: int) -> bytes:
    for side, data in (("a", before), ("b", after)):
        (work / side).mkdir(exist_ok=True)
        (work / side / "f.txt").write_bytes(data)
    out = subprocess.run(
        ["git", "diff", "--no-index", "--no-color", f"-U{context}", "a/f.txt", "b/f.txt"],
        cwd=work,
        capture_output=True,
        check=False,
    )
    assert out.returncode == 1, out.stderr
    return out.stdout.replace(b"a/a/", b"a/").replace(b"b/b/", b"b/")


def git_apply(work: Path, baseline: bytes, patch: bytes, context: int) -> bytes:
    target = work / "t"
    target.mkdir(exist_ok=True)
    (target / "f.txt").write_bytes(baseline)
    args = ["git", "apply", "-p1"] + (["--unidiff-zero"] if context == 0 else []) + ["-"]
    done = subprocess.run(args, cwd=target, input=patch, capture_output=True, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return (target / "f.txt").read_bytes()


@st.composite
def edited_files(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """A baseline of distinct lines and an edited copy (replaced, deleted and inserted lines)."""
    count = draw(st.integers(min_value=1, max_value=50))
    lines = [b"base %d\n" % n for n in range(count)]
    if draw(st.booleans()):
        lines[-1] = lines[-1].rstrip(b"\n")  # no newline at end of file
    after: list[bytes] = []
    fresh = 0
    for line in lines:
        op = draw(st.sampled_from(["keep"] * 6 + ["replace", "delete", "insert"]))
        if op == "keep":
            after.append(line)
        elif op == "replace":
            after.append(b"new %d\n" % fresh)
            fresh += 1
        elif op == "insert":
            after.extend([line, b"new %d\n" % fresh])
            fresh += 1
    before = b"".join(lines)
    edited = b"".join(after)
    if edited.endswith(b"\n") and not before.endswith(b"\n") and draw(st.booleans()):
        edited = edited[:-1]
    return before, edited


def _first(start: int, count: int) -> int:
    """The first line a side of a hunk covers (a zero count names the line before)."""
    return start if count else start + 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edited_files(), st.integers(min_value=0, max_value=3), st.data())
def test_any_subset_of_hunks_equals_git_apply_of_the_subset(
    files: tuple[bytes, bytes], context: int, data: st.DataObject
) -> None:
    before, after = files
    if before == after:
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        block = split_blocks(git_diff(work, before, after, context))[0].text
        hashes = hunk_hashes(block)
        assert hashes and len(set(hashes)) == len(hashes)
        keep = data.draw(st.lists(st.booleans(), min_size=len(hashes), max_size=len(hashes)))
        if not any(keep):
            keep[data.draw(st.integers(0, len(hashes) - 1))] = True
        chosen = {h for h, k in zip(hashes, keep, strict=True) if k}
        cut = select_hunks(block, chosen)
        ours = apply_block(before, cut)
        assert ours == git_apply(work, before, cut, context)
        if all(keep):
            assert cut == block and ours == after
        # the cut patch's @@ lines are exact: every kept hunk's new side starts where the old side plus the
        # kept hunks before it put it, and the counts are the original hunk's
        delta = 0
        originals = {h.sha256: h for h in split_hunks(block)[1]}
        kept = split_hunks(cut)[1]
        assert len(kept) == len(chosen)
        for hunk in kept:
            assert _first(hunk.new_start, hunk.new_count) == _first(hunk.old_start, hunk.old_count) + delta
            delta += hunk.new_count - hunk.old_count
            body = hunk.text.split(b"\n", 1)[1]
            assert any(
                o.text.split(b"\n", 1)[1] == body and (o.old_count, o.new_count) == (hunk.old_count, hunk.new_count)
                for o in originals.values()
            )


def test_hunk_hash_is_the_sha256_of_the_hunk_bytes_in_the_patch(tmp_path: Path) -> None:
    before = b"".join(b"%d\n" % n for n in range(30))
    after = before.replace(b"2\n", b"two\n", 1).replace(b"27\n", b"")
    patch = git_diff(tmp_path, before, after, 3)
    starts = [m.start() for m in _HEADER.finditer(patch)] + [len(patch)]
    expected = [hashlib.sha256(patch[a:b]).hexdigest() for a, b in itertools.pairwise(starts)]
    assert hunk_hashes(split_blocks(patch)[0].text) == expected and len(expected) == 2


def test_unknown_or_empty_selection_is_refused(tmp_path: Path) -> None:
    patch = git_diff(tmp_path, b"a\nb\n", b"a\nc\n", 3)
    block = split_blocks(patch)[0].text
    with pytest.raises(PatchError, match="not in the patch"):
        select_hunks(block, {"0" * 64})
    with pytest.raises(PatchError, match="no hunk selected"):
        select_hunks(block, set())


def test_a_hunk_shorter_than_its_header_is_refused() -> None:
    block = b"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n"
    with pytest.raises(PatchError, match="shorter"):
        split_hunks(block)
