"""Diff model from real `git diff` output: rows, line numbers, word spans, binary, no-newline, cut lines."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from widgets.diff_model import build_model, split_patch


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def patch(tmp_path: Path) -> str:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    (repo / "plugin").mkdir()
    (repo / "plugin" / "hello.php").write_text("<?php\n$greeting = 'hello world';\necho $greeting;\nreturn 1;\n")
    (repo / "gone.txt").write_text("bye\n")
    (repo / "logo.bin").write_bytes(b"\x00\x01\x02" * 10)
    (repo / "tail.txt").write_text("a\nb")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    (repo / "plugin" / "hello.php").write_text("<?php\n$greeting = 'hello there world';\necho $greeting;\nreturn 2;\n")
    (repo / "gone.txt").unlink()
    (repo / "logo.bin").write_bytes(b"\x00\x09\x02" * 12)
    (repo / "tail.txt").write_text("a\nc")
    (repo / "new.css").write_text("body { color: red; }\n" + "x" * 3000 + "\n")
    _git(repo, "add", "-A")
    return _git(repo, "diff", "--cached", "--binary")


def test_split_patch_keys_every_file(patch: str) -> None:
    blocks = split_patch(patch)
    assert sorted(blocks) == ["gone.txt", "logo.bin", "new.css", "plugin/hello.php", "tail.txt"]
    assert "".join(blocks[k] for k in blocks) == patch


def test_rows_line_numbers_and_counts(patch: str) -> None:
    model = build_model("plugin/hello.php", split_patch(patch)["plugin/hello.php"])
    assert (model.additions, model.deletions, model.binary) == (2, 2, False)
    assert model.rows[0].kind == "header" and model.rows[0].text == "plugin/hello.php"
    assert [r.kind for r in model.rows if r.kind in ("hunk",)] == ["hunk"]
    body = [(r.kind, r.old_no, r.new_no, r.text) for r in model.rows if r.kind in ("ctx", "add", "del")]
    assert body[0] == ("ctx", 1, 1, "<?php")
    assert ("del", 2, None, "$greeting = 'hello world';") in body
    assert ("add", None, 2, "$greeting = 'hello there world';") in body
    assert ("add", None, 4, "return 2;") in body
    assert model.hunk_rows == [i for i, r in enumerate(model.rows) if r.kind == "hunk"]


def test_word_spans_mark_only_the_changed_words(patch: str) -> None:
    model = build_model("plugin/hello.php", split_patch(patch)["plugin/hello.php"])
    add = next(r for r in model.rows if r.kind == "add" and "there" in r.text)
    marked = "".join(add.text[s:e] for s, e in add.spans)
    assert "there" in marked and "greeting" not in marked
    ret = next(r for r in model.rows if r.kind == "del" and r.text.startswith("return"))
    assert [ret.text[s:e] for s, e in ret.spans] == ["1"]


def test_binary_deleted_and_no_newline(patch: str) -> None:
    blocks = split_patch(patch)
    binary = build_model("logo.bin", blocks["logo.bin"])
    assert binary.binary and [r.kind for r in binary.rows][-1] == "binary"
    assert not any("literal" in r.text for r in binary.rows)
    gone = build_model("gone.txt", blocks["gone.txt"])
    assert (gone.additions, gone.deletions) == (0, 1)
    assert any(r.kind == "meta" and "deleted file" in r.text for r in gone.rows)
    tail = build_model("tail.txt", blocks["tail.txt"])
    assert [r.kind for r in tail.rows].count("nonl") == 2


def test_very_long_lines_are_cut_with_a_marker(patch: str) -> None:
    block = split_patch(patch)["new.css"]
    cut = build_model("new.css", block, max_line=200)
    long_row = next(r for r in cut.rows if r.text.startswith("xxx"))
    assert cut.truncated and long_row.text.endswith("chars)") and len(long_row.text) < 300
    full = build_model("new.css", block, max_line=1 << 30)
    assert not full.truncated and any(r.text == "x" * 3000 for r in full.rows)
