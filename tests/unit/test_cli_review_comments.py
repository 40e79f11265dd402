"""``codebox review comment …``, ``review iterate`` and ``review feedback`` through the real CLI entry point (run
in-process: a query starts no sandbox, so a process of its own per call would only add Python's start-up), with a
private CODEBOX_HOME and its real SQLite store."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from codebox_tui.bundle.verify import verify_bundle
from tests.factories.bundles import make_bundle, typical_change
from tests.factories.holds import codebox_in_process


def _codebox(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return codebox_in_process(home, *args, env={"CODEBOX_APPROVER": "maintainer"})


def _json(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_comment_iterate_and_feedback_through_the_cli(tmp_path: Path) -> None:
    summary, _ = make_bundle(tmp_path, typical_change)
    home = tmp_path / "home"
    bundle = str(summary.path)
    issue = _json(
        _codebox(
            home,
            "review",
            "comment",
            "add",
            bundle,
            "--file",
            "plugin.php",
            "--line",
            "21",
            "--type",
            "issue",
            "-m",
            "Keep it lower case.",
            "--json",
        )
    )
    assert issue["line_start"] == issue["line_end"] == 21 and issue["lines"] == ["<?php // LINE twenty"]
    ranged = _json(
        _codebox(
            home,
            "review",
            "comment",
            "add",
            "@1",
            "--file",
            "plugin.php",
            "--line",
            "19-22",
            "--type",
            "suggestion",
            "-m",
            "Reword.",
            "--json",
        )
    )
    _json(
        _codebox(home, "review", "comment", "add", "@1", "--file", "added.php", "--type", "note", "-m", "tmp", "--json")
    )

    refused = _codebox(home, "review", "comment", "add", "@1", "--file", "plugin.php", "--line", "2", "-m", "x")
    assert refused.returncode == 2 and "not shown in the diff" in refused.stderr and "Traceback" not in refused.stderr
    refused = _codebox(home, "review", "comment", "add", "@1", "--file", "plugin.php", "--line", "x-y", "-m", "x")
    assert refused.returncode == 2 and "--line" in refused.stderr

    edited = _json(_codebox(home, "review", "comment", "edit", str(ranged["id"]), "-m", "Reword this.", "--json"))
    assert edited["body"] == "Reword this."
    listed = _json(_codebox(home, "review", "comment", "list", "@1", "--json"))
    note = next(c for c in listed["comments"] if c["kind"] == "note")
    _json(_codebox(home, "review", "comment", "delete", str(note["id"]), "--json"))
    listed = _json(_codebox(home, "review", "comment", "list", "@1", "--json"))
    assert sorted(c["id"] for c in listed["comments"]) == sorted([issue["id"], ranged["id"]])

    decided = _codebox(home, "review", "iterate", "@1", "-m", "Two things to fix.")
    assert decided.returncode == 0, decided.stderr
    review_dir = summary.path.with_name(summary.path.name + ".review")
    assert str(review_dir / "feedback.md") in decided.stdout
    doc = json.loads((review_dir / "feedback.json").read_text())
    assert doc["schema"] == "codebox/review-feedback/v1"
    assert [c["id"] for c in doc["comments"]] == [issue["id"], ranged["id"]]
    assert doc["decision"]["reason"] == "Two things to fix."
    assert verify_bundle(summary.path).valid

    listed = _json(_codebox(home, "review", "comment", "list", "@1", "--json"))
    assert {c["decisionId"] for c in listed["comments"]} == {doc["decision"]["id"]}
    locked = _codebox(home, "review", "comment", "delete", str(issue["id"]))
    assert locked.returncode != 0 and "can no longer change" in locked.stderr

    printed = _codebox(home, "review", "feedback", "@1", "--print")
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == (review_dir / "feedback.md").read_text()
    assert "Keep it lower case." in printed.stdout and "Reword this." in printed.stdout


def test_link_revisions_and_interdiff_through_the_cli(tmp_path: Path) -> None:
    from tests.factories.bundles import second_try

    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first, _ = make_bundle(tmp_path / "one", typical_change)
    second, _ = make_bundle(tmp_path / "two", second_try)
    home = tmp_path / "home"
    _json(
        _codebox(
            home,
            "review",
            "comment",
            "add",
            str(first.path),
            "--file",
            "plugin.php",
            "--line",
            "21",
            "-m",
            "lower case",
            "--json",
        )
    )
    _json(
        _codebox(
            home,
            "review",
            "comment",
            "add",
            "@1",
            "--file",
            "plugin.php",
            "--line",
            "19",
            "--type",
            "note",
            "-m",
            "fine",
            "--json",
        )
    )
    _codebox(home, "review", "iterate", "@1", "-m", "fix it")
    linked = _codebox(home, "review", "link", str(second.path), "--revises", "@1")
    assert linked.returncode == 0, linked.stderr
    assert "@2 is revision 2 of 2 (revises @1)" in linked.stdout
    doc = _json(_codebox(home, "review", "revisions", "@2", "--interdiff", "--json"))
    assert [(r["revision"], r["bundleKey"], r["decision"]) for r in doc["revisions"]] == [
        (1, 1, "iterate"),
        (2, 2, None),
    ]
    files = {f["path"]: f for f in doc["interdiff"]["files"]}
    assert files["plugin.php"]["change"] == "changed" and "++<?php // line twenty" in files["plugin.php"]["lines"]
    assert sorted((c["body"], c["outdated"]) for c in doc["carriedComments"]) == [("fine", False), ("lower case", True)]
    text = _codebox(home, "review", "revisions", "@2", "--interdiff")
    assert text.returncode == 0, text.stderr
    assert "revision 2 (explicit): @2" in text.stdout and "(outdated): lower case" in text.stdout
    assert "interdiff @1 -> @2:" in text.stdout
    loop = _codebox(home, "review", "link", "@1", "--revises", "@2")
    assert loop.returncode == 2 and "loop" in loop.stderr


def test_compare_two_bundles_through_the_cli(tmp_path: Path) -> None:
    from tests.factories.bundles import second_try

    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first, _ = make_bundle(tmp_path / "one", typical_change)
    second, _ = make_bundle(tmp_path / "two", second_try)
    home = tmp_path / "home"
    _codebox(home, "review", "approve", str(first.path))
    doc = _json(_codebox(home, "review", "compare", str(first.path), str(second.path), "--json"))
    assert doc["schema"] == "codebox/bundle-comparison/v1"
    assert doc["a"]["decision"] == "approve" and doc["b"]["decision"] is None
    files = {f["path"]: f for f in doc["files"]}
    assert files["added.php"]["samePatch"] is True
    assert files["readme.txt"]["b"] is None and files["keep.bin"]["b"] is None and files["lib/run.sh"]["b"] is None
    assert files["plugin.php"]["samePatch"] is False and "++<?php // line five" in files["plugin.php"]["interdiff"]
    assert files["plugin.php"]["aLines"] == {"added": 2, "deleted": 1}  # line 21 changed, one line appended
    assert doc["summary"] == {"onlyA": 3, "onlyB": 0, "same": 1, "different": 1}
    text = _codebox(home, "review", "compare", "@1", "@2", "--patches")
    assert text.returncode == 0, text.stderr
    assert "only A" in text.stdout and "differs" in text.stdout and "++<?php // line five" in text.stdout
