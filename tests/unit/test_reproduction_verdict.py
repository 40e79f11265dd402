"""The verdict of a reproduction recipe (docs/evaluate-patch.md, "Reproducing a bug")."""

from __future__ import annotations

from codebox_tui.bundle.checks import recipe_verdict

SEEN = {"name": "bug", "status": "passed"}
NOT_SEEN = {"name": "bug", "status": "failed", "expectJson": {"words": 3}, "actualOutput": '{"words":2}'}


def test_all_probes_passing_is_reproduced() -> None:
    verdict = recipe_verdict([], probes=[SEEN], reproduction=True)
    assert verdict.status == "reproduced" and verdict.passed


def test_a_probe_not_passing_is_not_reproduced_with_what_came_back() -> None:
    verdict = recipe_verdict([{"phase": "probes", "probe": "bug"}], probes=[NOT_SEEN], reproduction=True)
    assert verdict.status == "not-reproduced" and not verdict.passed
    assert verdict.failures[0]["what"] == "probe 'bug'"


def test_a_failed_step_says_nothing_about_the_bug() -> None:
    failed_step = {"phase": "steps", "command": "wordpress.run-php", "error": "boom"}
    assert recipe_verdict([failed_step], probes=[SEEN], reproduction=True).status == "failed"
    assert recipe_verdict([], probes=[], reproduction=True).status == "failed"  # nothing described the bug


def test_an_ordinary_recipe_is_unchanged() -> None:
    assert recipe_verdict([], probes=[SEEN]).status == "passed"
    assert recipe_verdict([], probes=[NOT_SEEN]).status == "failed"
