"""``wordpress.browser-probe``: load one page of the live preview in Chromium and keep the evidence.

:func:`run_probe` works against any URL (tests use a local http.server); the catalog handler that resolves
the URL against the sandbox preview and registers the evidence files is
:func:`codebox_tui.runtime.browser_commands.browser_probe`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from codebox_tui.browser import driver
from codebox_tui.browser.checkpoints import (
    WAIT_STATES,
    NamedCheckpoint,
)
from codebox_tui.browser.launch import (
    Recorder,
    cap_text,
    parse_viewport,
    write_json,
    write_jsonl,
)
from codebox_tui.durations import parse_duration
from codebox_tui.errors import BadInputError

PROBE_SCHEMA = "wp-codebox/browser-probe-result/v1"
ALL_CAPTURES = ("console", "errors", "html", "network", "performance", "screenshot")  # the default
# Asked for by name only (capture=...,memory,checkpoints), so a probe that names none keeps its evidence files.
OPT_IN_CAPTURES = ("memory", "checkpoints")
PROBE_CAPTURES = ALL_CAPTURES + OPT_IN_CAPTURES

CONTENT_TYPES = {
    "console.jsonl": "application/x-ndjson",
    "errors.jsonl": "application/x-ndjson",
    "network.jsonl": "application/x-ndjson",
    "performance.json": "application/json",
    "snapshot.html": "text/html",
    "screenshot.png": "image/png",
    "summary.json": "application/json",
    "steps.json": "application/json",
    "steps.jsonl": "application/x-ndjson",
    "action-summary.json": "application/json",
    "memory.json": "application/json",
    "checkpoints.jsonl": "application/x-ndjson",
}


def parse_capture(value: str | None, allowed: tuple[str, ...], default: tuple[str, ...] | None = None) -> list[str]:
    """The capture=a,b,c list, checked against allowed; without one, default (else everything allowed)."""
    if not value:
        return list(default if default is not None else allowed)
    items = [v.strip() for v in value.split(",") if v.strip()]
    bad = [v for v in items if v not in allowed]
    if bad:
        raise BadInputError(
            f"capture accepts {','.join(allowed)}; unknown: {', '.join(bad)}", code="invalid-arg", field="capture"
        )
    return items


def write_evidence(
    out_dir: Path, recorder: Recorder, capture: list[str], page: Any | None, metrics: dict[str, Any] | None
) -> list[str]:
    """Write the captured evidence files; returns their names."""
    written: list[str] = []
    if "console" in capture:
        write_jsonl(out_dir / "console.jsonl", recorder.console)
        written.append("console.jsonl")
    if "errors" in capture:
        write_jsonl(out_dir / "errors.jsonl", recorder.errors)
        written.append("errors.jsonl")
    if "network" in capture:
        write_jsonl(out_dir / "network.jsonl", recorder.network + recorder.blocked)
        written.append("network.jsonl")
    if "performance" in capture and metrics is not None:
        write_json(out_dir / "performance.json", metrics)
        written.append("performance.json")
    if page is not None and "html" in capture:
        try:
            (out_dir / "snapshot.html").write_text(page.content(), encoding="utf-8")
            written.append("snapshot.html")
        except Exception:  # a crashed/closed page has no DOM; the summary says so
            pass
    if page is not None and "screenshot" in capture:
        try:
            page.screenshot(path=str(out_dir / "screenshot.png"), full_page=True, timeout=10_000)
            written.append("screenshot.png")
        except Exception:
            pass
    return written


def run_probe(
    url: str,
    out_dir: Path,
    *,
    wait_for: str | None = None,
    viewport: str | None = None,
    capture: list[str] | None = None,
    timeout_s: float = 30.0,
    origin_url: str | None = None,
    named: list[NamedCheckpoint] | None = None,
) -> dict[str, Any]:
    """Load url, write evidence into out_dir, return the summary (also written as summary.json). ``named``
    checkpoints are taken in order once the page has loaded (:class:`NamedCheckpoint`); naming any writes
    ``checkpoints.jsonl``."""
    captures = list(capture or ALL_CAPTURES)
    size = parse_viewport(viewport)
    wait = wait_for or "load"
    selector: str | None = None
    settle_s = 0.0
    if wait[:1].isdigit():  # a duration: load, then give the page this long (timers, lazy scripts)
        settle_s, wait = parse_duration(wait, "wait-for"), "load"
        if settle_s >= timeout_s:
            raise BadInputError(
                f"wait-for {wait_for} must be shorter than the probe's timeout of {timeout_s:g}s",
                code="invalid-arg",
                field="wait-for",
            )
    elif wait.startswith("selector:"):
        selector, wait = wait[len("selector:") :], "load"
        if not selector:
            raise BadInputError("wait-for=selector: needs a CSS selector", code="invalid-arg", field="wait-for")
    elif wait not in WAIT_STATES:
        raise BadInputError(
            f"wait-for must be one of {', '.join(WAIT_STATES)}, selector:<css> or a duration like 500ms, got {wait!r}",
            code="invalid-arg",
            field="wait-for",
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    recorder = Recorder(origin_url or url)
    started = time.monotonic()
    status: int | None = None
    error: str | None = None
    metrics: dict[str, Any] | None = None
    memory: dict[str, Any] | None = None
    checkpoints: list[dict[str, Any]] = []
    title = ""
    files: list[str] = []

    def load(open_browser: driver.OpenBrowser) -> None:
        nonlocal status, error, metrics, memory, title, files
        browser = open_browser()
        try:
            context = browser.new_context(viewport=size)
            page = context.new_page()
            recorder.attach(context, page)
            cdp = context.new_cdp_session(page) if "performance" in captures or named else None
            if cdp is not None:
                cdp.send("Performance.enable")
            heap = context.new_cdp_session(page) if "memory" in captures else None

            def checkpoint(name: str) -> None:
                checkpoints.append(_checkpoint(name, page, heap, started))

            try:
                response = page.goto(url, wait_until=wait, timeout=timeout_s * 1000)
                status = response.status if response is not None else None
                checkpoint(wait)
                if selector:
                    remaining = max(0.1, timeout_s - (time.monotonic() - started))
                    page.wait_for_selector(selector, timeout=remaining * 1000)
                    checkpoint("selector")
                if settle_s:
                    page.wait_for_timeout(settle_s * 1000)
                    checkpoint("settled")
                for index, point in enumerate(named or []):
                    checkpoints.append(_named_checkpoint(point, index, page, cdp, heap, started, timeout_s, out_dir))
                    if "error" in checkpoints[-1]:
                        error = f"checkpoint {point.name}: {checkpoints[-1]['error']}"
                        break
                title = cap_text(page.title())[0]
            except Exception as exc:
                error = _short(exc)
            checkpoint("captured")
            if cdp is not None:
                metrics = _performance(cdp, page)
            if heap is not None:
                memory = {
                    "at": "captured",
                    **checkpoints[-1].get("memory", {}),
                    "checkpoints": [
                        {"name": c["name"], "offsetMs": c["offsetMs"], **c.get("memory", {})} for c in checkpoints
                    ],
                }
            files = write_evidence(out_dir, recorder, captures, page, metrics)
            files.extend(c["screenshot"] for c in checkpoints if c.get("screenshot"))
            if memory is not None:
                write_json(out_dir / "memory.json", memory)
                files.append("memory.json")
            if "checkpoints" in captures or named:
                write_jsonl(out_dir / "checkpoints.jsonl", checkpoints)
                files.append("checkpoints.jsonl")
        finally:
            browser.close()

    driver.drive(load)
    summary = {
        "schema": PROBE_SCHEMA,
        "status": "failed" if error or (status or 0) >= 400 else "passed",
        "url": url,
        "httpStatus": status,
        "title": title,
        "waitFor": wait_for or "load",
        "viewport": size,
        "durationMs": int((time.monotonic() - started) * 1000),
        "counts": recorder.counts(),
        "evidenceLimits": recorder.limits(),
        "consoleErrors": [c["text"] for c in recorder.console if c["type"] == "error"][:20],
        "pageErrors": [e["message"] for e in recorder.errors][:20],
        "files": [*files, "summary.json"],
        "error": error,
    }
    write_json(out_dir / "summary.json", summary)
    return summary


def _named_checkpoint(
    point: NamedCheckpoint,
    index: int,
    page: Any,
    cdp: Any,
    heap: Any | None,
    started: float,
    timeout_s: float,
    out_dir: Path,
) -> dict[str, Any]:
    """Wait for a named checkpoint's condition within what is left of the probe's timeout, then record the moment
    with its screenshot (``screenshot-checkpoint-<name>.png``), the page's metrics and, with memory, its heap. A
    condition that is not met is the record's ``error`` (and fails the probe)."""
    error: str | None = None
    try:
        remaining = timeout_s - (time.monotonic() - started)
        if point.settle_s and point.settle_s >= remaining:
            raise BadInputError(
                f"waiting {point.wait} would pass the probe's timeout of {timeout_s:g}s",
                code="invalid-arg",
                field="checkpoint",
            )
        if point.selector:
            page.wait_for_selector(point.selector, timeout=max(0.1, remaining) * 1000)
        elif point.settle_s:
            page.wait_for_timeout(point.settle_s * 1000)
    except Exception as exc:
        error = _short(exc)
    record = {**_checkpoint(point.name, page, heap, started), "named": True, "index": index, "wait": point.wait}
    if error is not None:
        record["error"] = error
        return record
    file = f"screenshot-checkpoint-{point.name}.png"
    try:
        page.screenshot(path=str(out_dir / file), full_page=True, timeout=10_000)
        record["screenshot"] = file
    except Exception as exc:  # a page that cannot be drawn still has its moment recorded
        record["screenshotError"] = _short(exc)
    try:
        record["metrics"] = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    except Exception as exc:
        record["metricsError"] = _short(exc)
    return record


def _checkpoint(name: str, page: Any, heap: Any | None, started: float) -> dict[str, Any]:
    """A named moment of the probe (the wait state reached, the selector found, the page settled, the evidence
    captured) with the page's URL and, when memory is captured, its JavaScript heap at that moment."""
    point: dict[str, Any] = {"name": name, "offsetMs": int((time.monotonic() - started) * 1000)}
    try:
        point["url"] = cap_text(page.url)[0]
    except Exception:  # a closed page has no URL
        point["url"] = None
    if heap is not None:
        point["memory"] = _js_heap(heap, page)
    return point


def _js_heap(cdp: Any, page: Any) -> dict[str, Any]:
    """The page's JavaScript heap: Chromium's own count (CDP ``Runtime.getHeapUsage``) and what the page sees
    in ``performance.memory`` (coarser by design)."""
    out: dict[str, Any] = {}
    try:
        usage = cdp.send("Runtime.getHeapUsage")
        out["heapUsedBytes"], out["heapTotalBytes"] = int(usage["usedSize"]), int(usage["totalSize"])
    except Exception as exc:
        out["heapError"] = _short(exc)
    try:
        out["performanceMemory"] = page.evaluate(
            "() => performance.memory ? {usedJSHeapSize: performance.memory.usedJSHeapSize, totalJSHeapSize: "
            "performance.memory.totalJSHeapSize, jsHeapSizeLimit: performance.memory.jsHeapSizeLimit} : null"
        )
    except Exception as exc:
        out["performanceMemoryError"] = _short(exc)
    return out


def _performance(cdp: Any, page: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        out["metrics"] = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    except Exception as exc:
        out["metricsError"] = _short(exc)
    try:
        out["navigation"] = page.evaluate(
            "() => { const n = performance.getEntriesByType('navigation')[0]; return n ? n.toJSON() : null; }"
        )
    except Exception as exc:
        out["navigationError"] = _short(exc)
    return out


def _short(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0][:500] if str(exc).strip() else type(exc).__name__
