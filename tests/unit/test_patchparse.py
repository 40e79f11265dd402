"""The one patch parser (codebox_tui.bundle.patchparse, on unidiff) and what the diff model makes of it."""

from __future__ import annotations

from codebox_tui.bundle.patchparse import line_counts, parse_section, split_sections, unquote_path
from tests.factories.reference_bundle import REFERENCE_PATCH
from widgets.diff_model import build_model, split_patch


def test_sections_keep_the_exact_text_and_describe_each_file() -> None:
    sections = split_sections(REFERENCE_PATCH)
    assert "".join(s.text for s in sections) == REFERENCE_PATCH
    assert [(s.path, s.status, s.additions, s.deletions) for s in sections] == [
        ("includes/new.php", "added", 2, 0),
        ("old.txt", "deleted", 0, 1),
        ("plugin.php", "modified", 1, 1),
    ]
    assert line_counts(REFERENCE_PATCH)["old.txt"] == (0, 1, False)


def test_blank_lines_between_reference_sections_are_not_context_rows() -> None:
    """The reference writes a blank line after each file section; it used to be drawn as a context row
    numbered after the hunk (``0   5``-style phantom lines)."""
    blocks = split_patch(REFERENCE_PATCH)
    for path, block in blocks.items():
        model = build_model(path, block)
        code = [(r.kind, r.old_no, r.new_no, r.text) for r in model.rows if r.kind in ("ctx", "add", "del")]
        assert all(text for _kind, _old, _new, text in code), (path, code)
    added = build_model("includes/new.php", blocks["includes/new.php"])
    assert [(r.kind, r.new_no, r.text) for r in added.rows if r.kind in ("ctx", "add", "del")] == [
        ("add", 1, "<?php"),
        ("add", 2, "--x"),
    ]
    deleted = build_model("old.txt", blocks["old.txt"])
    assert [(r.kind, r.old_no, r.text) for r in deleted.rows if r.kind in ("ctx", "add", "del")] == [("del", 1, "gone")]


def test_a_blank_context_line_inside_a_hunk_is_kept() -> None:
    """Editors strip the space of an empty context line; inside a hunk it is still a context line."""
    block = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n"
    _section, hunks = parse_section(block)
    assert [(line.kind, line.old_no, line.new_no, line.text) for line in hunks[0].lines] == [
        ("ctx", 1, 1, "a"),
        ("ctx", 2, 2, ""),
        ("del", 3, None, "b"),
        ("add", None, 3, "c"),
    ]


def test_a_section_unidiff_refuses_is_reported_and_the_rest_still_parse() -> None:
    patch = (
        "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,3 +1 @@\n-a\n+b\n"
        "diff --git a/y b/y\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n"
    )
    sections = split_sections(patch)
    # counts are parsed on first use; a refused section then carries unidiff's error
    assert [(s.path, s.additions, s.error is not None) for s in sections] == [("x", 0, True), ("y", 1, False)]
    model = build_model("x", sections[0].text)
    assert model.rows[1].kind == "binary" and "could not be parsed" in model.rows[1].text
    assert [r.text for r in model.rows[2:]][-2:] == ["-a", "+b"]


def test_git_quoted_names_are_decoded() -> None:
    assert unquote_path('"b/\\033[2Jx\\342\\200\\256.php"') == "\x1b[2Jx\u202e.php"
    assert unquote_path("/dev/null") is None and unquote_path("a/dir/f.php") == "dir/f.php"
    patch = 'diff --git "a/\\033x" "b/\\033x"\n--- "a/\\033x"\n+++ "b/\\033x"\n@@ -1 +1 @@\n-a\n+b\n'
    assert list(split_patch(patch)) == ["\x1bx"]


def test_plain_unified_diffs_without_git_headers_split_too() -> None:
    patch = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-c\n+d\n"
    assert split_patch(patch) == {
        "x": "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n",
        "y": "--- a/y\n+++ b/y\n@@ -1 +1 @@\n-c\n+d\n",
    }


def test_tabs_and_control_characters_in_rows_are_display_text() -> None:
    block = (
        "diff --git a/t.php b/t.php\n--- a/t.php\n+++ b/t.php\n@@ -1,2 +1,2 @@\n"
        "-\t$a = 'x';\t// c\n+\t$a = '\x1b[2J';\t// c\n \treturn;\n"
    )
    model = build_model("t.php", block, tab_size=4)
    rows = {r.kind: r for r in model.rows}
    assert rows["del"].text == "    $a = 'x';   // c"
    assert rows["add"].text == "    $a = '\\x1b[2J'; // c"
    assert [rows["add"].text[s:e] for s, e in rows["add"].escapes] == ["\\x1b"]
    assert rows["ctx"].text == "    return;"
    # word spans index the display text, so the changed word is exactly the escaped string
    start, end = rows["add"].spans[0]
    assert rows["add"].text[start:end] == "\\x1b[2J"
