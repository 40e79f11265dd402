"""The Review screen's comment panel and Revisions tab as text (codebox_tui/screens/review_text.py): pure
functions of store values, checked without Textual."""

from __future__ import annotations

from rich.text import Text

from codebox_tui.screens.data import RevisionView
from codebox_tui.screens.review_text import comment_colour, comment_panel_text, revisions_text
from store.comments import Comment
from store.db import BundleRecord
from store.revisions import FileInterdiff, Revision
from widgets.diff_styles import MARK_STYLES


def _comment(
    number: int,
    *,
    kind: str = "issue",
    side: str = "new",
    lines: tuple[int, int] | None = (3, 4),
    body: str = "fix this",
    bundle_key: int = 2,
    decision_id: int | None = None,
    outdated: bool = False,
) -> Comment:
    start, end = lines if lines is not None else (None, None)
    return Comment(
        id=number,
        bundle_key=bundle_key,
        content_digest="0" * 64,
        path="plugin.php",
        side=side if lines is not None else "file",
        line_start=start,
        line_end=end,
        lines=[],
        kind=kind,
        body=body,
        author="ana",
        decision_id=decision_id,
        created_at="",
        updated_at="",
        outdated=outdated,
    )


def _record(key: int) -> BundleRecord:
    return BundleRecord(
        key=key,
        bundle_id=f"artifact-bundle-sha256-{key}",
        path=f"/b/{key}",
        content_digest=f"{key:064x}",
        run_id=None,
        changed_files=1,
        status="pending",
        created_at="",
        updated_at="",
    )


def test_each_comment_type_has_the_colour_of_its_line_mark() -> None:
    for kind, style in MARK_STYLES.items():
        assert style.color is not None and comment_colour(kind) == style.color.name
    assert comment_colour("unknown-kind") == "white"


def test_the_panel_lists_comments_here_the_rest_count_and_earlier_revisions() -> None:
    here = [_comment(1, decision_id=7), _comment(2, kind="praise", lines=None, body="[b]nice[/b]")]
    before = [_comment(9, kind="note", bundle_key=1, outdated=True)]
    text = comment_panel_text(here, 3, before, {1: 1, 2: 2})
    plain = Text.from_markup(text).plain
    assert "● issue #1 plugin.php:3-4 · ana (sent with decision #7)\n  fix this" in plain
    assert "● praise #2 plugin.php · ana\n  [b]nice[/b]" in plain  # sandbox-free but still escaped markup
    assert "3 more comment(s) on this file" in plain
    assert "revision 1: outdated note #9 plugin.php:3-4\n  fix this" in plain
    assert f"[b {comment_colour('issue')}]● issue[/]" in text
    assert comment_panel_text([], 0, [], {}) == ""


def test_the_revisions_tab_shows_tests_deltas_carried_comments_and_the_interdiff() -> None:
    first = Revision(number=1, bundle=_record(1), how=None, decision=None, tests={"total": 4, "passed": 2, "failed": 2})
    second = Revision(
        number=2,
        bundle=_record(2),
        how="session",
        decision=None,
        tests={"total": 4, "passed": 4, "failed": 0},
        verdict="improvement",
    )
    interdiff = [FileInterdiff(path="plugin.php", change="changed", lines=["+-old", "++new"] + ["  x"] * 401)]
    view = RevisionView([first, second], 2, first, interdiff, [_comment(5, bundle_key=1, outdated=True)])
    plain = Text.from_markup(revisions_text(view)).plain
    assert plain.startswith("Revision 2 of 2\n")
    assert "  1. @1 000000000000 undecided · 2/4 passed, 2 failed" in plain
    assert (
        "  2. @2 000000000000 undecided · 4/4 passed, 0 failed (passed +2, failed -2) · verdict improvement "
        "linked by session  ◀ this bundle" in plain
    )
    assert "Comments from earlier revisions (1, 1 outdated)\n  r1 issue plugin.php:3-4 outdated: fix this" in plain
    assert "What changed since revision 1\nchanged              plugin.php\n    +-old\n    ++new" in plain
    assert "    … 3 more lines (codebox review revisions --interdiff)" in plain

    alone = RevisionView([first, second], 1, None, [], [])
    assert Text.from_markup(revisions_text(alone)).plain.endswith(
        "This is the first revision; later ones are listed above."
    )
