"""``wordpress.browser-actions``: drive the live preview through scripted steps and keep the evidence.

Steps (JSON array, inline or ``@path``): ``navigate{url}``, ``click{selector}``, ``fill{selector, value}``,
``press{key, selector?}``, ``select{selector, value}``, ``waitFor{selector, state?} | {ms}``,
``expect{selector?, text?, visible?, count?, url?}``, ``screenshot{name?}`` and ``evaluate{script}`` (only when
the policy grants ``wordpress.browser-actions.evaluate``). The run stops at the first failing step;
``steps.json`` records each step and ``summary.json`` the index of the first failure. Every step has a
timeout and the whole run has a total budget.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from codebox_tui.browser.launch import Recorder, launch, resolve_url, write_json
from codebox_tui.browser.probe import CONTENT_TYPES, write_evidence
from codebox_tui.durations import parse_duration
from codebox_tui.errors import BadInputError, PolicyDeniedError
from codebox_tui.jsonargs import load_json_arg

ACTIONS_SCHEMA = "wp-codebox/browser-actions-result/v1"
ACTION_CAPTURES = ("console", "errors", "html", "network", "screenshot")
ACTIONS: dict[str, tuple[str, ...]] = {  # action -> required keys
    "navigate": ("url",), "click": ("selector",), "fill": ("selector", "value"), "press": ("key",),
    "select": ("selector", "value"), "waitFor": (), "expect": (), "screenshot": (), "evaluate": ("script",),
}
_ = CONTENT_TYPES


def parse_steps(raw: str, base_dir: Path | None = None) -> list[dict[str, Any]]:
    """Parse and check steps-json (inline JSON or @file); every problem names the step index."""
    # The one @path resolver shared with `recipe validate` and `recipe-run` (relative to base_dir, which is
    # the recipe's directory for recipes and the working directory for a direct command).
    steps = load_json_arg(raw, base_dir if base_dir is not None else Path.cwd(), "steps-json")
    if not isinstance(steps, list) or not steps:
        raise BadInputError("steps-json must be a non-empty JSON array of steps", code="invalid-arg",
                            field="steps-json")
    for index, step in enumerate(steps):
        where = f"steps-json[{index}]"
        if not isinstance(step, dict) or not isinstance(step.get("action"), str):
            raise BadInputError("each step must be an object with an 'action'", code="invalid-step", field=where)
        action = step["action"]
        if action not in ACTIONS:
            raise BadInputError(f"unknown action {action!r}; expected one of: {', '.join(ACTIONS)}",
                                code="invalid-step", field=where)
        missing = [k for k in ACTIONS[action] if not isinstance(step.get(k), str)]
        if missing:
            raise BadInputError(f"{action} needs string field(s): {', '.join(missing)}", code="invalid-step",
                                field=where)
        if action == "waitFor" and not (isinstance(step.get("selector"), str) or isinstance(step.get("ms"), int)):
            raise BadInputError("waitFor needs a selector or ms", code="invalid-step", field=where)
        if "timeout" in step:
            timeout = step["timeout"]
            if isinstance(timeout, bool) or not isinstance(timeout, str | int | float):
                raise BadInputError("timeout must be a duration like 5s or 500ms (a bare number is seconds)",
                                    code="invalid-step", field=f"{where}.timeout")
            parse_duration(str(timeout), f"{where}.timeout")
    return steps


class StepFailed(Exception):
    pass


def _do_step(page: Any, step: dict[str, Any], timeout_ms: float, base_url: str, out_dir: Path,
             shots: list[str]) -> dict[str, Any]:
    action = step["action"]
    detail: dict[str, Any] = {}
    if action == "navigate":
        response = page.goto(resolve_url(base_url, step["url"]), wait_until=step.get("waitUntil", "load"),
                             timeout=timeout_ms)
        detail["httpStatus"] = response.status if response is not None else None
        if response is not None and response.status >= 400 and not step.get("allowErrorStatus"):
            raise StepFailed(f"HTTP {response.status} for {step['url']}")
    elif action == "click":
        page.click(step["selector"], timeout=timeout_ms)
    elif action == "fill":
        page.fill(step["selector"], step["value"], timeout=timeout_ms)
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
        detail["result"] = page.evaluate(step["script"])
    return detail


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
        return True, "", {"url": page.url}
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


def run_actions(start_url: str | None, steps: list[dict[str, Any]], out_dir: Path, *, base_url: str,
                step_timeout_s: float = 10.0, total_timeout_s: float = 60.0, capture: list[str] | None = None,
                allow_evaluate: bool = False, viewport: dict[str, int] | None = None) -> dict[str, Any]:
    """Run steps in Chromium, stopping at the first failure; writes evidence + steps.json + summary.json."""
    from playwright.sync_api import sync_playwright  # noqa: PLC0415 - Playwright only when a page is driven

    for index, step in enumerate(steps):
        if step["action"] == "evaluate" and not allow_evaluate:
            raise PolicyDeniedError("evaluate steps need wordpress.browser-actions.evaluate in the runtime policy",
                                    code="command-denied", field=f"steps-json[{index}]")
    captures = list(capture or ACTION_CAPTURES)
    out_dir.mkdir(parents=True, exist_ok=True)
    recorder = Recorder(base_url)
    started = time.monotonic()
    deadline = started + total_timeout_s + 60.0  # reset once the browser is up: launch is not a step
    results: list[dict[str, Any]] = []
    first_failure: int | None = None
    failure: str | None = None
    shots: list[str] = []
    with sync_playwright() as pw:
        browser = launch(pw)
        try:
            context = browser.new_context(viewport=viewport or {"width": 1280, "height": 800})
            page = context.new_page()
            recorder.attach(context, page)
            deadline = time.monotonic() + total_timeout_s
            plan = ([{"action": "navigate", "url": start_url, "implicit": True}] if start_url else []) + steps
            offset = 1 if start_url else 0
            for position, step in enumerate(plan):
                index = position - offset
                remaining = deadline - time.monotonic()
                per_step = (parse_duration(str(step["timeout"]), f"steps-json[{index}].timeout") if "timeout" in step
                            else step_timeout_s)
                record: dict[str, Any] = {"index": index, "action": step["action"]}
                if step.get("implicit"):
                    record["implicit"] = True
                t0 = time.monotonic()
                if remaining <= 0:
                    record.update(status="failed", error=f"total timeout of {total_timeout_s:g}s exhausted")
                else:
                    try:
                        detail = _do_step(page, step, min(per_step, remaining) * 1000, base_url, out_dir, shots)
                        record.update(status="passed", **detail)
                    except (StepFailed, BadInputError) as exc:
                        record.update(status="failed", error=str(exc))
                    except Exception as exc:  # Playwright TimeoutError / Error
                        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                        if "Timeout" in type(exc).__name__ or "Timeout" in msg:
                            msg = f"step timed out after {min(per_step, remaining):g}s: {msg}"
                        record.update(status="failed", error=msg[:500])
                if record["status"] == "failed" and remaining > 0 and remaining < per_step:
                    record["error"] = f"total timeout of {total_timeout_s:g}s exhausted during this step: " + str(
                        record["error"])
                record["durationMs"] = int((time.monotonic() - t0) * 1000)
                results.append(record)
                if record["status"] == "failed":
                    first_failure, failure = index, record["error"]
                    break
            executed = len(results)
            for position in range(executed, len(plan)):
                results.append({"index": position - offset, "action": plan[position]["action"],
                                "status": "skipped"})
            files = write_evidence(out_dir, recorder, captures, page, None)
        finally:
            browser.close()
    write_json(out_dir / "steps.json", results)
    summary = {
        "schema": ACTIONS_SCHEMA,
        "status": "failed" if first_failure is not None else "passed",
        "startUrl": start_url,
        "steps": len(steps),
        "passed": sum(1 for r in results if r["status"] == "passed" and not r.get("implicit")),
        "firstFailureIndex": first_failure,
        "failure": failure,
        "durationMs": int((time.monotonic() - started) * 1000),
        "counts": {"console": len(recorder.console), "errors": len(recorder.errors),
                   "requests": len(recorder.network), "blockedRequests": len(recorder.blocked)},
        "files": [*files, *shots, "steps.json", "summary.json"],
    }
    write_json(out_dir / "summary.json", summary)
    return summary
