"""Browser probe and actions against a real Chromium and a local http.server started by the test."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from codebox_tui.browser.actions import MAX_EVALUATE_RESULT_BYTES, parse_steps, run_actions
from codebox_tui.browser.probe import run_probe
from codebox_tui.errors import PolicyDeniedError

pytestmark = [pytest.mark.integration, pytest.mark.chromium]

PAGE = """<!doctype html><html><head><title>Shortcode demo</title></head><body>
<h1 id="h">Hello</h1><input id="i"><select id="s"><option value="a">A</option><option value="b">B</option></select>
<button id="b" onclick="document.getElementById('h').textContent = document.getElementById('i').value
  + ':' + document.getElementById('s').value">go</button>
<script>console.log('loaded 42'); console.error('synthetic error');
fetch('https://example.com/leak').catch(() => {}); fetch('/missing.json');
setTimeout(() => { throw new Error('late boom'); }, 10);</script></body></html>"""


# adds an element 200 ms after load and keeps ~8 MB of strings alive: what wait-for=<duration> and memory see
LATE_PAGE = """<!doctype html><html><head><title>Late</title></head><body><p id="first">first</p>
<script>window.kept = Array.from({length: 200000}, (_, i) => 'item-' + i);
window.addEventListener('load', () => setTimeout(() => {
  const p = document.createElement('p'); p.id = 'late'; p.textContent = 'late'; document.body.append(p);
}, 200));</script></body></html>"""


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("site")
    (root / "index.html").write_text(PAGE)
    (root / "late.html").write_text(LATE_PAGE)
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def _jsonl(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def test_probe_writes_all_evidence(site: str, tmp_path: Path) -> None:
    summary = run_probe(site, tmp_path, viewport="800x600", wait_for="networkidle", timeout_s=30)
    assert summary["status"] == "passed" and summary["httpStatus"] == 200
    assert summary["title"] == "Shortcode demo"
    for name in (
        "console.jsonl",
        "errors.jsonl",
        "network.jsonl",
        "performance.json",
        "snapshot.html",
        "screenshot.png",
        "summary.json",
    ):
        assert (tmp_path / name).is_file(), name
    console = _jsonl(tmp_path / "console.jsonl")
    assert any(c["text"] == "loaded 42" and c["type"] == "log" for c in console)
    assert "synthetic error" in summary["consoleErrors"]
    network = _jsonl(tmp_path / "network.jsonl")
    assert any(str(n.get("url")).endswith("/missing.json") and n.get("status") == 404 for n in network)
    assert any(n.get("blocked") and "example.com" in str(n["url"]) for n in network)
    assert summary["counts"]["blockedRequests"] == 1
    assert (tmp_path / "screenshot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Hello" in (tmp_path / "snapshot.html").read_text()
    perf = json.loads((tmp_path / "performance.json").read_text())
    assert perf["metrics"]["Nodes"] > 0


def test_probe_waits_for_selector_and_fails_cleanly(site: str, tmp_path: Path) -> None:
    summary = run_probe(site, tmp_path / "a", wait_for="selector:#never", capture=["console"], timeout_s=2)
    assert summary["status"] == "failed" and summary["error"]
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["console.jsonl", "summary.json"]
    errors = run_probe(site, tmp_path / "b", wait_for="selector:#h", capture=["errors"], timeout_s=120)
    assert errors["status"] == "passed"


def test_actions_stop_at_first_failure_with_index(site: str, tmp_path: Path) -> None:
    steps = parse_steps(
        json.dumps(
            [
                {"action": "fill", "selector": "#i", "value": "typed"},
                {"action": "select", "selector": "#s", "value": "b"},
                {"action": "click", "selector": "#b"},
                {"action": "expect", "selector": "#h", "text": "typed:b"},
                {"action": "screenshot", "name": "after click"},
                {"action": "expect", "selector": "#h", "text": "never", "timeout": "300ms"},
                {"action": "click", "selector": "#b"},
            ]
        )
    )
    summary = run_actions(site, steps, tmp_path, base_url=site, step_timeout_s=5, total_timeout_s=60)
    assert summary["status"] == "failed"
    assert summary["firstFailureIndex"] == 5
    assert "never" in summary["failure"]
    recorded = json.loads((tmp_path / "steps.json").read_text())
    by_index = {r["index"]: r for r in recorded}
    assert [by_index[i]["status"] for i in range(7)] == ["passed"] * 5 + ["failed", "skipped"]
    assert (tmp_path / "screenshot-after_click.png").is_file()
    assert json.loads((tmp_path / "summary.json").read_text())["firstFailureIndex"] == 5


def test_actions_step_and_total_timeouts(site: str, tmp_path: Path) -> None:
    # the page load has its own generous timeout (on a loaded machine it can take longer than the 0.5 s under test)
    steps = parse_steps(
        json.dumps([{"action": "navigate", "url": site, "timeout": "30s"}, {"action": "click", "selector": "#absent"}])
    )
    summary = run_actions(None, steps, tmp_path / "a", base_url=site, step_timeout_s=0.5, total_timeout_s=30)
    assert summary["firstFailureIndex"] == 1 and "timed out" in summary["failure"], summary
    assert summary["durationMs"] < 20_000
    steps = parse_steps(json.dumps([{"action": "waitFor", "ms": 300}] * 20))
    summary = run_actions(None, steps, tmp_path / "b", base_url=site, step_timeout_s=5, total_timeout_s=1)
    assert summary["status"] == "failed" and "total timeout" in summary["failure"]
    assert 0 < summary["firstFailureIndex"] < 20


def test_evaluate_needs_separate_grant(site: str, tmp_path: Path) -> None:
    steps = parse_steps('[{"action": "evaluate", "script": "() => document.title"}]')
    with pytest.raises(PolicyDeniedError):
        run_actions(site, steps, tmp_path / "a", base_url=site)
    summary = run_actions(site, steps, tmp_path / "b", base_url=site, allow_evaluate=True)
    assert summary["status"] == "passed"
    recorded = json.loads((tmp_path / "b" / "steps.json").read_text())
    assert recorded[-1]["result"] == "Shortcode demo"


def test_probe_waits_a_duration_and_captures_memory_at_named_checkpoints(site: str, tmp_path: Path) -> None:
    summary = run_probe(
        site + "late.html", tmp_path, wait_for="1500ms", timeout_s=60, capture=["html", "memory", "checkpoints"]
    )
    assert summary["status"] == "passed" and summary["waitFor"] == "1500ms"
    assert summary["files"] == ["snapshot.html", "memory.json", "checkpoints.jsonl", "summary.json"]
    assert 'id="late"' in (tmp_path / "snapshot.html").read_text()  # the page ran its timer before capture
    checkpoints = _jsonl(tmp_path / "checkpoints.jsonl")
    assert [c["name"] for c in checkpoints] == ["load", "settled", "captured"]
    assert checkpoints[1]["offsetMs"] - checkpoints[0]["offsetMs"] >= 1500
    assert all(str(c["url"]).endswith("/late.html") for c in checkpoints)
    memory = json.loads((tmp_path / "memory.json").read_text())
    assert memory["at"] == "captured" and memory["heapUsedBytes"] > 4_000_000  # the page's kept strings
    assert memory["heapTotalBytes"] >= memory["heapUsedBytes"]
    assert all(c["memory"]["heapUsedBytes"] > 0 for c in checkpoints)


def test_probe_wait_for_duration_longer_than_the_timeout_is_refused(site: str, tmp_path: Path) -> None:
    from codebox_tui.errors import BadInputError

    with pytest.raises(BadInputError) as info:
        run_probe(site, tmp_path, wait_for="5s", timeout_s=2)
    assert info.value.field == "wait-for" and "shorter than the probe's timeout" in info.value.message
    with pytest.raises(BadInputError) as bad:
        run_probe(site, tmp_path, wait_for="5 parsecs", timeout_s=2)
    assert bad.value.field == "wait-for"


def test_evaluate_takes_expressions_functions_and_promises_and_caps_a_large_value(site: str, tmp_path: Path) -> None:
    steps = parse_steps(
        json.dumps(
            [
                {"action": "evaluate", "expression": "document.title;", "assert": "Shortcode demo"},
                {"action": "evaluate", "expression": "async () => 41 + 1", "assert": 42},
                {"action": "evaluate", "expression": "Promise.resolve({ok: true})", "assert": {"ok": True}},
                {"action": "evaluate", "expression": "Array.from({length: 20000}, (_, i) => i)"},
            ]
        )
    )
    summary = run_actions(site, steps, tmp_path / "e", base_url=site, allow_evaluate=True)
    assert summary["status"] == "passed", summary["failure"]
    lines = _jsonl(tmp_path / "e" / "steps.jsonl")
    cut = lines[-1]["resultTruncated"]
    assert "result" not in lines[-1]
    assert cut["bytes"] == len(json.dumps(list(range(20000)), separators=(",", ":")))
    assert cut["keptBytes"] == MAX_EVALUATE_RESULT_BYTES and str(cut["text"]).startswith("[0,1,2,")
