"""``wordpress.browser-actions``: drive the live preview through scripted steps and keep the evidence.

Steps (JSON array, inline or ``@path``): ``navigate{url}``, ``click{selector}``, ``hover{selector}``,
``fill{selector, value}``, ``type{selector, text, delay?}`` (key by key), ``press{key, selector?}``,
``select{selector, value}``, ``drag{source, target}``, ``waitFor{selector, state?} | {ms}``,
``expect{selector?, text?, visible?, count?, url?}``, ``screenshot{name?}`` and ``evaluate{expression, assert?}``
(``script`` is the older name of ``expression``; only when the policy grants ``wordpress.browser-actions.evaluate``).
Every step is checked before the browser starts (errors name ``steps-json[i].field``). The run stops at the first
failing step; ``steps.jsonl`` has one record per step (index, kind, target, status, timing, screenshot),
``action-summary.json`` the counts and the first failure, ``steps.json`` and ``summary.json`` the full result.
Every step has a timeout and the whole run has a total budget (docs/browser.md).
"""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codebox_tui.browser.launch import Recorder, cap_text, launch, resolve_url, write_json, write_jsonl
from codebox_tui.browser.probe import CONTENT_TYPES, write_evidence
from codebox_tui.durations import parse_duration
from codebox_tui.errors import BadInputError, PolicyDeniedError
from codebox_tui.jsonargs import load_json_arg

ACTIONS_SCHEMA = "wp-codebox/browser-actions-result/v1"
ACTION_SUMMARY_SCHEMA = "wp-codebox/browser-action-summary/v1"
ACTION_CAPTURES = ("console", "errors", "html", "network", "screenshot")
ACTIONS: dict[str, tuple[str, ...]] = {  # action -> required string keys
    "navigate": ("url",),
    "click": ("selector",),
    "hover": ("selector",),
    "fill": ("selector", "value"),
    "type": ("selector", "text"),
    "press": ("key",),
    "select": ("selector", "value"),
    "drag": ("source", "target"),
    "waitFor": (),
    "expect": (),
    "screenshot": (),
    "evaluate": (),
}
# optional keys with a fixed type: key -> (accepted types, what the error says is expected)
_OPTIONAL: dict[str, tuple[tuple[type, ...], str]] = {
    "selector": ((str,), "a CSS selector string"),
    "name": ((str,), "a string"),
    "text": ((str,), "a string"),
    "url": ((str,), "a string"),
    "waitUntil": ((str,), "a string"),
    "ms": ((int,), "a whole number of milliseconds"),
    "count": ((int,), "a whole number"),
    "delay": ((int,), "a whole number of milliseconds"),
    "visible": ((bool,), "true or false"),
    "allowErrorStatus": ((bool,), "true or false"),
}
# The most of an evaluate step's value kept (its JSON, in bytes): the page measures and cuts its own value, so a
# longer one never leaves the browser whole; what is kept is marked truncated (docs/browser.md).
MAX_EVALUATE_RESULT_BYTES = 64 * 1024
# The step's expression (or function, which is called) evaluated in the page with its value kept there, boxed in an
# object: a handle to a bare string would carry the string itself to Codebox as the handle's preview.
_BOXED_RESULT_JS = """(async () => {{ let value = ({expression}
); if (typeof value === "function") {{ value = value(); }} return {{value: await value}}; }})()"""
# Runs in the page on the box: the JSON's size of the value, and the JSON itself when it fits (what was measured is
# what is recorded: a value read a second time could be a different, larger one), else its first ``limit`` bytes.
_MEASURE_RESULT_JS = """(box, limit) => {
    let text;
    try { text = JSON.stringify(box.value); } catch (error) { return {error: String(error).slice(0, 300)}; }
    if (text === undefined) { return {bytes: 0, fits: true}; }
    const encoded = new TextEncoder().encode(text);
    if (encoded.length <= limit) { return {bytes: encoded.length, fits: true, text: text}; }
    const kept = new TextDecoder().decode(encoded.slice(0, limit)).replace(/\ufffd$/, "");
    return {bytes: encoded.length, fits: false, text: kept};
}"""
_MAY_BE_EMPTY = ("value", "text")  # fill "" clears a field
WAIT_FOR_STATES = ("attached", "detached", "visible", "hidden")
_ = CONTENT_TYPES


def parse_steps(raw: str, base_dir: Path | None = None) -> list[dict[str, Any]]:
    """Parse and check steps-json (inline JSON or @file); every problem names the step index."""
    # The one @path resolver shared with `recipe validate` and `recipe-run` (relative to base_dir, which is
    # the recipe's directory for recipes and the working directory for a direct command).
    steps = load_json_arg(raw, base_dir if base_dir is not None else Path.cwd(), "steps-json")
    if not isinstance(steps, list) or not steps:
        raise BadInputError(
            "steps-json must be a non-empty JSON array of steps", code="invalid-arg", field="steps-json"
        )
    for index, step in enumerate(steps):
        where = f"steps-json[{index}]"
        if not isinstance(step, dict) or not isinstance(step.get("action"), str):
            raise BadInputError("each step must be an object with an 'action'", code="invalid-step", field=where)
        action = step["action"]
        if action not in ACTIONS:
            raise BadInputError(
                f"unknown action {action!r}; expected one of: {', '.join(ACTIONS)}", code="invalid-step", field=where
            )
        _check_fields(step, action, where)
        if "timeout" in step:
            timeout = step["timeout"]
            if isinstance(timeout, bool) or not isinstance(timeout, str | int | float):
                raise BadInputError(
                    "timeout must be a duration like 5s or 500ms (a bare number is seconds)",
                    code="invalid-step",
                    field=f"{where}.timeout",
                )
            parse_duration(str(timeout), f"{where}.timeout")
    return steps


def _check_fields(step: dict[str, Any], action: str, where: str) -> None:
    """The per-action field rules; each error names ``steps-json[i].field`` and what was expected."""
    for key in ACTIONS[action]:
        if not isinstance(step.get(key), str) or (not step[key] and key not in _MAY_BE_EMPTY):
            raise BadInputError(
                f"{action} needs {key!r}: a {'' if key in _MAY_BE_EMPTY else 'non-empty '}string",
                code="invalid-step",
                field=f"{where}.{key}",
            )
    for key, (types, expected) in _OPTIONAL.items():
        if key in step and key not in ACTIONS[action]:
            value = step[key]
            if (bool not in types and isinstance(value, bool)) or not isinstance(value, types):
                raise BadInputError(
                    f"{key} must be {expected}, got {json.dumps(value)}", code="invalid-step", field=f"{where}.{key}"
                )
            if isinstance(value, int) and not isinstance(value, bool) and value < 0:
                raise BadInputError(f"{key} must not be negative", code="invalid-step", field=f"{where}.{key}")
    if action == "waitFor":
        if "selector" not in step and "ms" not in step:
            raise BadInputError("waitFor needs a selector or ms", code="invalid-step", field=f"{where}.selector")
        if "state" in step and step["state"] not in WAIT_FOR_STATES:
            raise BadInputError(
                f"state must be one of {', '.join(WAIT_FOR_STATES)}", code="invalid-step", field=f"{where}.state"
            )
    if action == "evaluate":
        code_key = "expression" if "expression" in step else "script"
        if not isinstance(step.get(code_key), str) or not step[code_key].strip():
            raise BadInputError(
                "evaluate needs 'expression': a non-empty JavaScript expression",
                code="invalid-step",
                field=f"{where}.expression",
            )
        if "expression" in step and "script" in step:
            raise BadInputError(
                "give 'expression' or its older name 'script', not both", code="invalid-step", field=f"{where}.script"
            )
    elif "assert" in step:
        raise BadInputError("only evaluate steps take 'assert'", code="invalid-step", field=f"{where}.assert")


def step_target(step: dict[str, Any]) -> str | None:
    """What a step acts on, for ``steps.jsonl``: the url, the selector, ``source -> target``, the key or the
    expression (cut to 200 characters)."""
    action = step["action"]
    if action == "navigate":
        return str(step["url"])
    if action == "drag":
        return f"{step['source']} -> {step['target']}"
    if action == "evaluate":
        return str(step.get("expression", step.get("script")))[:200]
    if action == "screenshot":
        return str(step.get("name")) if step.get("name") else None
    if action == "press" and not step.get("selector"):
        return str(step["key"])
    if action == "waitFor" and "selector" not in step:
        return f"{step['ms']}ms"
    selector = step.get("selector")
    return str(selector) if selector is not None else step.get("url")


def same_json(a: Any, b: Any) -> bool:
    """JSON equality without Python's ``True == 1``: what an evaluate step's ``assert`` compares."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    return type(a) is type(b) and bool(a == b)


class StepFailed(Exception):
    pass


def _do_step(
    page: Any, step: dict[str, Any], timeout_ms: float, base_url: str, out_dir: Path, shots: list[str]
) -> dict[str, Any]:
    action = step["action"]
    detail: dict[str, Any] = {}
    if action == "navigate":
        response = page.goto(
            resolve_url(base_url, step["url"]), wait_until=step.get("waitUntil", "load"), timeout=timeout_ms
        )
        detail["httpStatus"] = response.status if response is not None else None
        if response is not None and response.status >= 400 and not step.get("allowErrorStatus"):
            raise StepFailed(f"HTTP {response.status} for {step['url']}")
    elif action == "click":
        page.click(step["selector"], timeout=timeout_ms)
    elif action == "hover":
        page.hover(step["selector"], timeout=timeout_ms)
    elif action == "fill":
        page.fill(step["selector"], step["value"], timeout=timeout_ms)
    elif action == "type":
        page.locator(step["selector"]).press_sequentially(step["text"], delay=step.get("delay", 0), timeout=timeout_ms)
    elif action == "drag":
        page.drag_and_drop(step["source"], step["target"], timeout=timeout_ms)
    elif action == "press":
        if step.get("selector"):
            page.press(step["selector"], step["key"], timeout=timeout_ms)
        else:
            page.keyboard.press(step["key"])
    elif action == "select":
        page.select_option(step["selector"], step["value"], timeout=timeout_ms)
    elif action == "waitFor":
        if isinstance(step.get("selector"), str):
            page.wait_for_selector(step["selector"], state=step.get("state", "visible"), timeout=timeout_ms)
        else:
            if step["ms"] > timeout_ms:
                raise StepFailed(f"waitFor {step['ms']}ms exceeds the step timeout of {int(timeout_ms)}ms")
            page.wait_for_timeout(step["ms"])
    elif action == "expect":
        detail.update(_expect(page, step, timeout_ms))
    elif action == "screenshot":
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", str(step.get("name") or f"step-{len(shots) + 1}"))
        file = f"screenshot-{name}.png"
        page.screenshot(path=str(out_dir / file), full_page=True, timeout=timeout_ms)
        shots.append(file)
        detail["file"] = file
    elif action == "evaluate":
        detail.update(_evaluate(page, step))
    return detail


def _evaluate(page: Any, step: dict[str, Any]) -> dict[str, Any]:
    """Run an evaluate step's expression and record its value, at most :data:`MAX_EVALUATE_RESULT_BYTES` of its
    JSON: the value stays in the page (a handle) until the page has measured it, and only a value that fits, or
    the kept start of one that does not, is sent to Codebox (``resultTruncated``)."""
    expression = step.get("expression", step.get("script"))
    source = str(expression).rstrip().rstrip(";")  # `document.title;` is still the expression it ends with
    handle = page.evaluate_handle(_BOXED_RESULT_JS.format(expression=source))
    try:
        size = handle.evaluate(_MEASURE_RESULT_JS, MAX_EVALUATE_RESULT_BYTES)
    finally:
        handle.dispose()
    if "error" in size:
        raise StepFailed(f"evaluate {str(expression)[:200]!r} returned a value that is not JSON: {size['error']}")
    if size["fits"]:
        result = json.loads(size["text"]) if "text" in size else None
    else:
        cut = {
            "bytes": size["bytes"],
            "keptBytes": len(size["text"].encode("utf-8")),
            "text": size["text"],
            "truncated": True,
        }
        if "assert" in step:
            raise StepFailed(
                f"evaluate {str(expression)[:200]!r} returned {size['bytes']} bytes of JSON, over the "
                f"{MAX_EVALUATE_RESULT_BYTES}-byte cap: it cannot equal the assert"
            )
        return {"resultTruncated": cut}
    if "assert" in step and not same_json(result, step["assert"]):
        raise StepFailed(
            f"evaluate {str(expression)[:200]!r} returned {json.dumps(result)[:300]}, "
            f"expected {json.dumps(step['assert'])[:300]}"
        )
    return {"result": result}


def _expect(page: Any, step: dict[str, Any], timeout_ms: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_ms / 1000
    last = ""
    while True:  # poll until the expectation holds or the step times out
        try:
            ok, last, observed = _check_expect(page, step)
        except Exception as exc:  # navigation in progress etc.
            ok, last, observed = False, str(exc).splitlines()[0], {}
        if ok:
            return observed
        if time.monotonic() >= deadline:
            raise StepFailed(f"expectation failed: {last}")
        page.wait_for_timeout(100)


def _check_expect(page: Any, step: dict[str, Any]) -> tuple[bool, str, dict[str, Any]]:
    if "url" in step and step["url"] not in page.url:
        return False, f"url {page.url!r} does not contain {step['url']!r}", {}
    selector = step.get("selector")
    if selector is None:
        return True, "", {"url": cap_text(page.url)[0]}
    locator = page.locator(selector)
    count = locator.count()
    if "count" in step and count != step["count"]:
        return False, f"{selector!r} matched {count} elements, expected {step['count']}", {"count": count}
    if "count" not in step and count == 0:
        return False, f"no element matches {selector!r}", {"count": 0}
    if count and step.get("visible") is not None:
        visible = locator.first.is_visible()
        if visible != step["visible"]:
            return False, f"{selector!r} visible={visible}, expected {step['visible']}", {}
    if count and "text" in step:
        text = locator.first.inner_text()
        if step["text"] not in text:
            return False, f"{selector!r} text {text[:200]!r} does not contain {step['text']!r}", {"text": text[:500]}
        return True, "", {"count": count, "text": text[:500]}
    return True, "", {"count": count}


def run_actions(
    start_url: str | None,
    steps: list[dict[str, Any]],
    out_dir: Path,
    *,
    base_url: str,
    step_timeout_s: float = 10.0,
    total_timeout_s: float = 60.0,
    capture: list[str] | None = None,
    allow_evaluate: bool = False,
    viewport: dict[str, int] | None = None,
) -> dict[str, Any]:
    """Run steps in Chromium, stopping at the first failure; writes the evidence, steps.jsonl,
    action-summary.json, steps.json and summary.json."""
    from playwright.sync_api import sync_playwright  # noqa: PLC0415 - Playwright only when a page is driven

    for index, step in enumerate(steps):
        if step["action"] == "evaluate" and not allow_evaluate:
            raise PolicyDeniedError(
                "evaluate steps need wordpress.browser-actions.evaluate in the runtime policy",
                code="command-denied",
                field=f"steps-json[{index}]",
            )
    captures = list(capture or ACTION_CAPTURES)
    out_dir.mkdir(parents=True, exist_ok=True)
    recorder = Recorder(base_url)
    started = time.monotonic()
    deadline = started + total_timeout_s + 60.0  # reset once the browser is up: launch is not a step
    results: list[dict[str, Any]] = []
    first_failure: int | None = None
    failure: str | None = None
    shots: list[str] = []
    plan = ([{"action": "navigate", "url": start_url, "implicit": True}] if start_url else []) + steps
    offset = 1 if start_url else 0
    with sync_playwright() as pw:
        browser = launch(pw)
        try:
            context = browser.new_context(viewport=viewport or {"width": 1280, "height": 800})
            page = context.new_page()
            recorder.attach(context, page)
            deadline = time.monotonic() + total_timeout_s
            for position, step in enumerate(plan):
                index = position - offset
                record = _run_step(
                    page, step, index, deadline, step_timeout_s, total_timeout_s, base_url, out_dir, shots, started
                )
                results.append(record)
                if record["status"] == "failed":
                    first_failure, failure = index, record["error"]
                    break
            files = write_evidence(out_dir, recorder, captures, page, None)
        finally:
            browser.close()
    for position in range(len(results), len(plan)):
        results.append({"index": position - offset, "action": plan[position]["action"], "status": "skipped"})
    write_json(out_dir / "steps.json", results)
    write_jsonl(
        out_dir / "steps.jsonl", [_step_line(record, plan[position]) for position, record in enumerate(results)]
    )
    summary = {
        "schema": ACTIONS_SCHEMA,
        "status": "failed" if first_failure is not None else "passed",
        "startUrl": start_url,
        "steps": len(steps),
        "passed": sum(1 for r in results if r["status"] == "passed" and not r.get("implicit")),
        "firstFailureIndex": first_failure,
        "failure": failure,
        "durationMs": int((time.monotonic() - started) * 1000),
        "counts": {kind: n for kind, n in recorder.counts().items() if kind != "failedRequests"},
        "evidenceLimits": recorder.limits(),
        "files": [*files, *shots, "steps.jsonl", "action-summary.json", "steps.json", "summary.json"],
    }
    write_json(out_dir / "action-summary.json", action_summary(summary, results))
    write_json(out_dir / "summary.json", summary)
    return summary


def _run_step(
    page: Any,
    step: dict[str, Any],
    index: int,
    deadline: float,
    step_timeout_s: float,
    total_timeout_s: float,
    base_url: str,
    out_dir: Path,
    shots: list[str],
    run_started: float,
) -> dict[str, Any]:
    """Run one step within its own timeout and what is left of the total; a failed step gets a screenshot."""
    remaining = deadline - time.monotonic()
    per_step = (
        parse_duration(str(step["timeout"]), f"steps-json[{index}].timeout") if "timeout" in step else step_timeout_s
    )
    record: dict[str, Any] = {"index": index, "action": step["action"]}
    if step.get("implicit"):
        record["implicit"] = True
    record["startedAt"] = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    t0 = time.monotonic()
    record["offsetMs"] = int((t0 - run_started) * 1000)
    if remaining <= 0:
        record.update(status="failed", error=f"total timeout of {total_timeout_s:g}s exhausted")
    else:
        try:
            detail = _do_step(page, step, min(per_step, remaining) * 1000, base_url, out_dir, shots)
            record.update(status="passed", **detail)
        except (StepFailed, BadInputError) as exc:  # may quote the page (its URL): cut like the evidence
            record.update(status="failed", error=cap_text(str(exc))[0])
        except Exception as exc:  # Playwright TimeoutError / Error
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if "Timeout" in type(exc).__name__ or "Timeout" in msg:
                msg = f"step timed out after {min(per_step, remaining):g}s: {msg}"
            record.update(status="failed", error=msg[:500])
    if record["status"] == "failed" and 0 < remaining < per_step:
        record["error"] = f"total timeout of {total_timeout_s:g}s exhausted during this step: " + str(record["error"])
    record["durationMs"] = int((time.monotonic() - t0) * 1000)
    if record["status"] == "failed":
        file = f"screenshot-failed-step-{index}.png" if index >= 0 else "screenshot-failed-start.png"
        try:
            page.screenshot(path=str(out_dir / file), full_page=True, timeout=10_000)
            shots.append(file)
            record["failureScreenshot"] = file
        except Exception:  # a crashed page has nothing to show; the record says so by having no file
            pass
    return record


def _step_line(record: dict[str, Any], step: dict[str, Any]) -> dict[str, Any]:
    """One ``steps.jsonl`` record: what ran, on what, how it ended, when and for how long, its screenshot."""
    line: dict[str, Any] = {
        "index": record["index"],
        "kind": record["action"],
        "target": step_target(step),
        "status": record["status"],
    }
    if record.get("implicit"):
        line["implicit"] = True
    line["timing"] = (
        {"startedAt": record["startedAt"], "offsetMs": record["offsetMs"], "durationMs": record["durationMs"]}
        if "startedAt" in record
        else None
    )
    line["screenshot"] = record.get("file") or record.get("failureScreenshot")
    if "error" in record:
        line["error"] = record["error"]
    if "result" in record:
        line["result"] = record["result"]
    if "resultTruncated" in record:
        line["resultTruncated"] = record["resultTruncated"]
    return line


def action_summary(summary: dict[str, Any], results: list[dict[str, Any]]) -> dict[str, Any]:
    """``action-summary.json``: the run's outcome with counts per status and per kind of action."""
    by_status = {
        status: sum(1 for r in results if r["status"] == status and not r.get("implicit"))
        for status in ("passed", "failed", "skipped")
    }
    by_kind: dict[str, dict[str, int]] = {}
    for record in results:
        if not record.get("implicit"):
            counts = by_kind.setdefault(record["action"], {"passed": 0, "failed": 0, "skipped": 0})
            counts[record["status"]] += 1
    return {
        "schema": ACTION_SUMMARY_SCHEMA,
        "status": summary["status"],
        "startUrl": summary["startUrl"],
        "steps": summary["steps"],
        **by_status,
        "byKind": by_kind,
        "firstFailureIndex": summary["firstFailureIndex"],
        "failure": summary["failure"],
        "screenshots": [
            r.get("file") or r["failureScreenshot"] for r in results if r.get("file") or r.get("failureScreenshot")
        ],
        "durationMs": summary["durationMs"],
        "stepsFile": "steps.jsonl",
    }
