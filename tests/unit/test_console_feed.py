"""Reading console messages from DevTools events (`browser/console_feed.py`, docs/browser.md "Evidence limits"):
pure functions, so event dicts written here stand in for what Chromium sends. The real page-side cut is performed
by tests/security/test_page_evidence_caps.py."""

from __future__ import annotations

from typing import Any

from codebox_tui.browser.console_feed import (
    from_console_api,
    from_log_entry,
    js_string,
    new_secret,
    render_preview,
    reported,
)

PAGE_FRAME = {"url": "http://127.0.0.1:8080/", "lineNumber": 3, "columnNumber": 9, "functionName": ""}
WRAPPER_FRAME = {"url": "", "lineNumber": 20, "columnNumber": 40, "functionName": "cut"}


def _event(context: str | None, frames: list[dict[str, Any]], *args: dict[str, Any]) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "log", "args": list(args), "executionContextId": 1}
    event["stackTrace"] = {"callFrames": frames}
    if context is not None:
        event["context"] = context
    return event


def test_a_message_through_the_cut_reports_what_was_removed_and_the_page_line() -> None:
    secret = new_secret()
    message = from_console_api(
        _event(f"{secret}:2088960#7", [WRAPPER_FRAME, PAGE_FRAME], {"type": "string", "value": "c" * 8192}), secret
    )
    assert message.removed == 2088960 and message.text == "c" * 8192
    assert message.location == {"url": PAGE_FRAME["url"], "line": 3, "column": 9, "lineNumber": 3, "columnNumber": 9}


def test_a_context_named_without_the_secret_claims_nothing() -> None:
    secret = new_secret()
    for forged in (f"{new_secret()}:999#1", "anything#2", None):
        message = from_console_api(_event(forged, [PAGE_FRAME], {"type": "string", "value": "hi"}), secret)
        assert message.removed == 0 and message.location["lineNumber"] == 3


def test_text_reads_as_playwright_renders_it() -> None:
    args = [
        {"type": "string", "value": "n"},
        {"type": "number", "value": 1.0},
        {"type": "number", "value": 1e-7},
        {"type": "boolean", "value": True},
        {"type": "object", "subtype": "null", "value": None},
        {"type": "undefined"},
        {"type": "number", "unserializableValue": "NaN", "description": "NaN"},
        {"type": "object", "description": "Object", "preview": {"properties": [{"name": "a", "value": "1"}]}},
        {"type": "object", "subtype": "array", "preview": {"properties": [{"name": "0", "value": "1"}]}},
        {"type": "object", "subtype": "node", "description": "body"},
        {"type": "function", "description": "function f() {}"},
    ]
    text = from_console_api(_event(None, [], *args), new_secret())
    assert text.text == "n 1 1e-7 true null undefined NaN {a: 1} [1] JSHandle@node function f() {}"
    assert render_preview({"type": "object", "subtype": "array", "preview": {"properties": [
        {"name": "0", "value": "1"}, {"name": "3", "value": "4"}, {"name": "length", "value": "4"}
    ]}}) == "[1, empty x 2, 4]"  # fmt: skip


def test_numbers_read_as_javascript_writes_them() -> None:
    expected = {1.5: "1.5", 100.0: "100", 1e21: "1e+21", 1e20: "100000000000000000000", 1e-6: "0.000001"}
    expected |= {-2.5e-10: "-2.5e-10", 0.1 + 0.2: "0.30000000000000004", 12: "12", 10**22: "1e+22"}
    assert {value: js_string(value) for value in expected} == expected


def test_no_execution_context_and_worker_log_entries_are_left_to_playwright_s_own_reports() -> None:
    assert not reported({"type": "log", "args": [], "executionContextId": 0})
    assert not reported({"entry": {"source": "worker", "level": "error", "text": "x"}})
    event = {"entry": {"source": "network", "level": "error", "text": "404", "url": "http://x/"}}
    assert reported(event) and reported(_event(None, [], {"type": "string", "value": "x"}))
    entry = from_log_entry(event)
    assert entry.type == "error" and entry.text == "404" and entry.location["url"] == "http://x/"
