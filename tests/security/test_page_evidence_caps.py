"""A page under review floods the browser evidence (docs/browser.md, "Evidence limits"): through the real
`codebox run --backend native` and real Chromium, one page logs 250 console messages of 2 MB and 5,000 small ones
(five times the entry cap, all told), throws an error with a 2 MB message and requests a URL with a 1 MB query.
The run still passes; every recorded text is cut to the cap and says so with its real length, each kind keeps at
most its entry cap, and the summary counts what was dropped, so the bundle stays small. The 500 MB of console text
never reaches the host: the peak resident size of Playwright's driver (the Node process that drives Chromium)
and the peak of Python's allocations in the CLI stay far below it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.browser.launch import MAX_EVIDENCE_ENTRIES, MAX_EVIDENCE_TEXT_BYTES
from tests.factories.browser_runs import driver_peak_env, native_page_run, python_peak_launcher

pytestmark = [pytest.mark.native, pytest.mark.chromium]

# Each far past the caps (8 KiB of text, 1,000 entries). 250 messages of 2 MB outnumber the 200 messages
# Playwright's driver keeps of a page, so a driver handed them whole would hold 400 MB of them at once.
HUGE_LOG = 2 * 1024 * 1024
HUGE_LOGS = 250
SMALL_LOGS = 5_000
HUGE_ERROR = 2 * 1024 * 1024
HUGE_QUERY = 1024 * 1024
# What the host processes may peak at: well above what they need with the console cut in the page (measured:
# the driver 166 MiB, Python 64 MiB; the 2 MB error and the 1 MB URL still reach both whole), well below what
# the messages cost them handed over whole (measured: the driver 481 MiB and Python 426 MiB by the 168th of
# them, when the page's load timed out).
DRIVER_PEAK_BOUND_KIB = 320 * 1024
PYTHON_PEAK_BOUND_BYTES = 200 * 1024 * 1024
# A must-use plugin (the code under review) whose front page floods every channel the recorder listens to; it
# marks <body> once the request has settled and the error has been thrown, so the steps wait on a condition. The
# huge messages go in turn through its console, a fresh about:blank iframe's and a console.context() one: the
# consoles a page could reach for to get round a cut made in the page.
HOSTILE_PAGE = f"""<?php
add_action( 'wp_footer', function () {{
    echo "<script>
    const huge = 'c'.repeat({HUGE_LOG});
    const iframe = document.body.appendChild(document.createElement('iframe')).contentWindow.console;
    const consoles = [console, iframe, console.context('flood')];
    for (let i = 0; i < {HUGE_LOGS}; i++) {{ consoles[i % 3].log(huge + i); }}
    for (let i = 0; i < {SMALL_LOGS}; i++) {{ console.log('small ' + i); }}
    fetch('/?q=' + 'q'.repeat({HUGE_QUERY})).catch(() => null).finally(() => {{
        setTimeout(() => {{ throw new Error('e'.repeat({HUGE_ERROR})); }}, 0);
        setTimeout(() => {{ document.body.dataset.flooded = 'yes'; }}, 50);
    }});
    </script>";
}} );
"""
STEPS = [{"action": "waitFor", "selector": "body[data-flooded=yes]", "state": "attached"}]


@pytest.fixture(scope="module")
def flooded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("evidence-caps")
    driver_peak, python_peak = work / "driver-peak-kib", work / "python-peak-bytes"
    cli = native_page_run(
        work,
        ("codebox-flood.php", HOSTILE_PAGE),
        "wordpress.browser-actions",
        ["url=/", "step-timeout=300s", "timeout=600s", "capture=console,errors,network"],
        steps=STEPS,
        launcher=python_peak_launcher(python_peak),
        env=driver_peak_env(work, driver_peak),
        timeout=900,
    )
    # the run's result, passed or not: the peaks are measured either way (the test of the run asserts it passed)
    assert cli.stdout.startswith("{"), cli.stderr[-3000:]
    bundle = Path(json.loads(cli.stdout)["artifacts"]["directory"])
    return {
        "returncode": cli.returncode,
        "stderr": cli.stderr[-3000:],
        "bundle": bundle,
        "browser": bundle / "files" / "browser",
        "driverPeakKiB": int(driver_peak.read_text()),
        "pythonPeakBytes": int(python_peak.read_text()),
    }


def _rows(browser: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (browser / name).read_text().splitlines()]


def _kept_bytes(text: str) -> int:
    return len(text.encode("utf-8"))


def test_the_run_passes_and_the_bundle_stays_small(flooded: dict[str, Any]) -> None:
    assert flooded["returncode"] == 0, flooded["stderr"]
    summary = json.loads((flooded["browser"] / "summary.json").read_text())
    assert summary["status"] == "passed", summary
    for name in ("console.jsonl", "errors.jsonl", "network.jsonl"):
        lines = (flooded["browser"] / name).read_bytes().splitlines()
        assert len(lines) <= MAX_EVIDENCE_ENTRIES, (name, len(lines))
        # at most two cut texts (an error's message and stack) and a few short fields each
        assert max(len(line) for line in lines) < 2 * MAX_EVIDENCE_TEXT_BYTES + 1024, name
    bundle_bytes = sum(f.stat().st_size for f in flooded["bundle"].rglob("*") if f.is_file())
    assert bundle_bytes < 5 * 1024 * 1024, bundle_bytes  # 500 MB + 2 MB + 1 MB went in


def test_the_console_flood_never_reaches_the_host_processes(flooded: dict[str, Any]) -> None:
    assert flooded["driverPeakKiB"] < DRIVER_PEAK_BOUND_KIB, flooded["driverPeakKiB"]
    assert flooded["pythonPeakBytes"] < PYTHON_PEAK_BOUND_BYTES, flooded["pythonPeakBytes"]


def test_the_huge_console_messages_are_cut_and_the_flood_is_counted(flooded: dict[str, Any]) -> None:
    console = _rows(flooded["browser"], "console.jsonl")
    assert len(console) == MAX_EVIDENCE_ENTRIES
    huge = [row for row in console if row["text"].startswith("ccc")]
    assert len(huge) == HUGE_LOGS
    for index, row in enumerate(huge):
        assert row["truncated"] is True and row["originalChars"] == {"text": HUGE_LOG + len(str(index))}
        assert _kept_bytes(row["text"]) == MAX_EVIDENCE_TEXT_BYTES
        assert row["location"]["url"].endswith("/") and row["location"]["lineNumber"] > 0  # the page's line
    assert not any(row.get("truncated") for row in console if row not in huge)  # small ones are kept whole
    assert "small 0" in {row["text"] for row in console}
    limits = json.loads((flooded["browser"] / "summary.json").read_text())["evidenceLimits"]
    # everything past the cap is counted (the page's own messages, and any the browser adds, such as the
    # failed request's console error)
    assert limits["dropped"]["console"] >= HUGE_LOGS + SMALL_LOGS - MAX_EVIDENCE_ENTRIES
    assert limits["maxEntries"] == MAX_EVIDENCE_ENTRIES and limits["maxTextBytes"] == MAX_EVIDENCE_TEXT_BYTES
    assert limits["truncated"]["console"] == HUGE_LOGS


def test_the_huge_page_error_is_cut(flooded: dict[str, Any]) -> None:
    [error] = [row for row in _rows(flooded["browser"], "errors.jsonl") if "eeee" in row["message"]]
    assert error["truncated"] is True
    assert error["originalChars"]["message"] == HUGE_ERROR
    assert error["originalChars"]["stack"] > HUGE_ERROR  # the stack repeats the message
    assert _kept_bytes(error["message"]) <= MAX_EVIDENCE_TEXT_BYTES
    assert _kept_bytes(error["stack"]) <= MAX_EVIDENCE_TEXT_BYTES


def test_the_huge_request_url_is_cut(flooded: dict[str, Any]) -> None:
    [request] = [row for row in _rows(flooded["browser"], "network.jsonl") if "?q=qqq" in row["url"]]
    assert request["truncated"] is True
    assert request["originalChars"]["url"] > HUGE_QUERY
    assert _kept_bytes(request["url"]) <= MAX_EVIDENCE_TEXT_BYTES
