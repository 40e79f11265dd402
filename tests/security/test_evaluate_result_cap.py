"""A page under review answers an `evaluate` step with a 50 MB string (docs/browser.md, "evaluate"): through the
real `codebox run --backend native` and real Chromium, the step records at most the cap of the value's JSON,
marked truncated with its real size; neither the bundle nor Codebox's own process ever holds the value whole
(the page measures and cuts it; the peak of what Python allocated in the host process is read when it exits)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.browser.actions import MAX_EVALUATE_RESULT_BYTES
from tests.factories.browser_runs import native_page_run, python_peak_launcher

pytestmark = pytest.mark.native

HUGE = 50 * 1024 * 1024
# A must-use plugin (the code under review) whose front page keeps a 50 MB string for any script that asks.
HOSTILE_PAGE = f"""<?php
add_action( 'wp_footer', function () {{
    echo "<script>window.codeboxAppState = 'x'.repeat({HUGE});</script>";
}} );
"""
STEPS = [
    {"action": "evaluate", "expression": "window.codeboxAppState"},
    {"action": "evaluate", "expression": "window.codeboxAppState.length", "assert": HUGE},
    # measured small (its JSON is what toJSON says), yet it holds the whole string: what is recorded must be what
    # was measured, never the value read a second time
    {"action": "evaluate", "expression": "({toJSON: () => 'small', held: window.codeboxAppState})"},
]


@pytest.fixture(scope="module")
def attacked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("evaluate-cap")
    policy = {"commands": ["wordpress.browser-actions", "wordpress.browser-actions.evaluate"]}
    peak = work / "peak-python-bytes"
    cli = native_page_run(
        work,
        ("codebox-huge-state.php", HOSTILE_PAGE),
        "wordpress.browser-actions",
        ["url=/", "step-timeout=120s", "capture=console,errors"],
        steps=STEPS,
        policy=policy,
        launcher=python_peak_launcher(peak),
    )
    assert cli.returncode == 0, cli.stderr[-3000:]
    doc = json.loads(cli.stdout)
    return {"bundle": Path(doc["artifacts"]["directory"]), "peakBytes": int(peak.read_text())}


def test_the_recorded_value_is_capped_and_marked_truncated(attacked: dict[str, Any]) -> None:
    browser = attacked["bundle"] / "files" / "browser"
    lines = [json.loads(line) for line in (browser / "steps.jsonl").read_text().splitlines()]
    [start, huge, length, disguised] = lines  # the implicit load of url=/, then the three steps
    assert start["status"] == huge["status"] == length["status"] == disguised["status"] == "passed"
    assert disguised["result"] == "small"
    cut = huge["resultTruncated"]
    assert "result" not in huge and cut["truncated"] is True
    assert cut["bytes"] == HUGE + 2  # the real size of its JSON (the string and its two quotes)
    assert cut["keptBytes"] <= MAX_EVALUATE_RESULT_BYTES and cut["text"].startswith('"xxxx')
    assert length["result"] == HUGE  # a small answer is still recorded whole
    bundle_bytes = sum(f.stat().st_size for f in attacked["bundle"].rglob("*") if f.is_file())
    assert bundle_bytes < 5 * 1024 * 1024, bundle_bytes  # nothing in the bundle holds the value


def test_the_host_process_never_held_the_value(attacked: dict[str, Any]) -> None:
    # What Python allocated at its peak in the CLI for such a run, Playwright and the run included: 35 MiB with the
    # cap, 234 MiB when the value came back whole (measured); holding the string even once adds its 50 MiB.
    assert attacked["peakBytes"] < HUGE + 16 * 1024 * 1024, attacked["peakBytes"]
