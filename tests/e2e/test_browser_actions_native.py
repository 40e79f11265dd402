"""One real `codebox run --backend native --command wordpress.browser-actions` (docs/browser.md): a must-use
plugin mounted read-only renders a hover target, a form with a select and a drag-and-drop pair on the front
page; the steps use every action kind, Chromium drives the page through the native preview relay, and the
bundle's steps.jsonl and action-summary.json (both in the manifest) are checked field by field. The last
evaluate's assert fails on purpose, so the run also shows how a failed assert is reported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.factories.browser_runs import native_page_run

pytestmark = pytest.mark.native

DEMO_PLUGIN = r"""<?php
/**
 * Plugin Name: Codebox actions demo
 */
add_action( 'wp_footer', function () {
	if ( ! is_front_page() ) {
		return;
	}
	?>
	<div id="codebox-demo">
		<p id="hover-target" onmouseenter="document.getElementById('hover-out').textContent = 'hovered';">hover me</p>
		<p id="hover-out">not hovered</p>
		<form id="demo-form" onsubmit="event.preventDefault(); document.getElementById('form-out').textContent = 'sent:' + this.elements.name.value + ':' + this.elements.colour.value;">
			<input id="name" name="name" onkeydown="window.codeboxKeys = (window.codeboxKeys || 0) + 1;">
			<select id="colour" name="colour"><option value="red">Red</option><option value="green">Green</option></select>
		</form>
		<p id="form-out">unsent</p>
		<div id="drag-source" draggable="true" ondragstart="event.dataTransfer.setData('text/plain', 'moved')" style="width:80px;height:40px">drag me</div>
		<div id="drop-zone" ondragover="event.preventDefault()" ondrop="event.preventDefault(); this.textContent = 'dropped:' + event.dataTransfer.getData('text/plain');" style="width:200px;height:80px">drop here</div>
	</div>
	<?php
} );
"""

STEPS: list[dict[str, Any]] = [
    {"action": "hover", "selector": "#hover-target"},
    {"action": "expect", "selector": "#hover-out", "text": "hovered"},
    {"action": "type", "selector": "#name", "text": "Ada"},  # three keydown events, counted by the page
    {"action": "select", "selector": "#colour", "value": "green"},
    {"action": "press", "selector": "#name", "key": "Enter"},  # submits the form: a fourth keydown
    {"action": "expect", "selector": "#form-out", "text": "sent:Ada:green"},
    {"action": "drag", "source": "#drag-source", "target": "#drop-zone"},
    {"action": "evaluate", "expression": "document.getElementById('drop-zone').textContent", "assert": "dropped:moved"},
    {"action": "evaluate", "expression": "window.codeboxKeys", "assert": 4},
    {"action": "screenshot", "name": "after-drop"},
    {"action": "evaluate", "expression": "document.querySelectorAll('#codebox-demo p').length", "assert": 99},
    {"action": "click", "selector": "#hover-target"},  # never runs: the run stops at the failed assert
]
FAILED = 10


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The one sandbox of this file: the CLI's run document and the bundle directory."""
    work = tmp_path_factory.mktemp("browser-actions")
    policy = {"commands": ["wordpress.browser-actions", "wordpress.browser-actions.evaluate"]}
    # step-timeout generous: two cores are shared with other test workers; the run stops at the failure anyway
    cli = native_page_run(
        work,
        ("codebox-actions-demo.php", DEMO_PLUGIN),
        "wordpress.browser-actions",
        ["url=/", "step-timeout=60s"],
        steps=STEPS,
        policy=policy,
    )
    assert cli.returncode == 1, cli.stderr[-2000:]  # the failed assert fails the command
    doc = json.loads(cli.stdout)
    assert doc["runtime"]["backend"] == "native"
    return {"doc": doc, "bundle": Path(doc["artifacts"]["directory"])}


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def test_every_action_kind_ran_and_steps_jsonl_records_each(run: dict[str, Any]) -> None:
    lines = _jsonl(run["bundle"] / "files" / "browser" / "steps.jsonl")
    assert [line["index"] for line in lines] == list(range(-1, len(STEPS)))
    start, *steps = lines
    assert start["kind"] == "navigate" and start["implicit"] and start["status"] == "passed"
    assert [line["kind"] for line in steps] == [step["action"] for step in STEPS]
    assert [line["status"] for line in steps] == ["passed"] * FAILED + ["failed", "skipped"]
    assert [line["target"] for line in steps[:8]] == [
        "#hover-target",
        "#hover-out",
        "#name",
        "#colour",
        "#name",
        "#form-out",
        "#drag-source -> #drop-zone",
        "document.getElementById('drop-zone').textContent",
    ]
    assert steps[7]["result"] == "dropped:moved" and steps[8]["result"] == 4
    for line in lines[: FAILED + 2]:  # every step that ran has its timing, in order
        timing = line["timing"]
        assert timing["durationMs"] >= 0 and timing["startedAt"].endswith("Z")
    offsets = [line["timing"]["offsetMs"] for line in lines[: FAILED + 2]]
    assert offsets == sorted(offsets)
    assert steps[-1]["timing"] is None and steps[-1]["screenshot"] is None
    assert steps[9]["screenshot"] == "screenshot-after-drop.png"
    assert steps[FAILED]["screenshot"] == f"screenshot-failed-step-{FAILED}.png"
    browser = run["bundle"] / "files" / "browser"
    for name in ("screenshot-after-drop.png", f"screenshot-failed-step-{FAILED}.png"):
        assert (browser / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_failed_assert_names_the_expression_and_the_value(run: dict[str, Any]) -> None:
    failure = "evaluate \"document.querySelectorAll('#codebox-demo p').length\" returned 3, expected 99"
    lines = _jsonl(run["bundle"] / "files" / "browser" / "steps.jsonl")
    assert lines[FAILED + 1]["error"] == failure
    summary = json.loads((run["bundle"] / "files" / "browser" / "action-summary.json").read_text())
    assert summary["schema"] == "wp-codebox/browser-action-summary/v1"
    assert (summary["status"], summary["firstFailureIndex"], summary["failure"]) == ("failed", FAILED, failure)
    assert (summary["steps"], summary["passed"], summary["failed"], summary["skipped"]) == (len(STEPS), FAILED, 1, 1)
    assert summary["byKind"]["evaluate"] == {"passed": 2, "failed": 1, "skipped": 0}
    assert summary["byKind"]["drag"] == {"passed": 1, "failed": 0, "skipped": 0}
    assert summary["byKind"]["click"] == {"passed": 0, "failed": 0, "skipped": 1}
    assert summary["screenshots"] == ["screenshot-after-drop.png", f"screenshot-failed-step-{FAILED}.png"]
    result = run["doc"]["executions"][0]["result"]
    assert result["status"] == "error" and result["json"]["failure"] == failure


def test_the_new_evidence_is_in_the_manifest_with_its_digest(run: dict[str, Any]) -> None:
    import hashlib

    manifest = json.loads((run["bundle"] / "manifest.json").read_text())
    listed = {f["path"]: f for f in manifest["files"]}
    for name, content_type in (
        ("steps.jsonl", "application/x-ndjson"),
        ("action-summary.json", "application/json"),
        (f"screenshot-failed-step-{FAILED}.png", "image/png"),
    ):
        entry = listed[f"files/browser/{name}"]
        data = (run["bundle"] / "files" / "browser" / name).read_bytes()
        assert entry["sha256"] == {"algorithm": "sha256", "value": hashlib.sha256(data).hexdigest()}, name
        assert entry["contentType"] == content_type, name
