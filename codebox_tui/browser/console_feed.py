"""Console messages cut in the page before they leave it, and read from the DevTools protocol.

Playwright's ``console`` event hands Codebox's process every argument of every message as a handle it keeps
until the page closes, and its driver keeps a page's last 200 messages whole, so a page that logs large texts
would cost both processes memory in proportion to what it sends. Instead the recorder
(:class:`codebox_tui.browser.launch.Recorder`) installs :func:`console_cut_script` in every frame before the
page's own scripts run: each ``console`` method passes on at most the text cap in characters of string arguments
in all and tells the host how many it removed through the name of the console context it calls. The recorder reads
``Runtime.consoleAPICalled`` and ``Log.entryAdded`` from a DevTools session of its own (plain events, nothing is
kept) and renders each message's text the way Playwright does (:func:`render_preview`). What does not come
through the cut (a worker's messages, an argument that is not a string) is recorded and cut on the host as
before; only its transit is not bounded (docs/browser.md, "Evidence limits")."""

from __future__ import annotations

import json
import math
import re
import secrets
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

# The wrapper: everything it uses is taken before any page script runs, so a page that later replaces
# Reflect.apply, String.prototype.slice, Object.defineProperty or Array.prototype methods changes nothing here
# (and the descriptor has no prototype, so a getter the page adds to Object.prototype is not read).
# Only string arguments are cut (their text is theirs); the total kept is the budget, later strings become ''
# so the number of arguments, and with it the separators of the message's text, stays the same. Every call goes
# through one console context named SECRET:0 (so counters and timers behave as on the page's console; each
# console.context() gets its own), and a call that lost characters through a fresh one named SECRET:<removed>.
_CUT_SCRIPT = """(() => {
  const SECRET = %(secret)s, BUDGET = %(budget)d;
  const apply = Reflect.apply, slice = Function.prototype.call.bind(String.prototype.slice);
  const names = Object.getOwnPropertyNames, define = Object.defineProperty, describe = Object.getOwnPropertyDescriptor;
  const makeContext = console.context;
  const named = (removed) => apply(makeContext, console, [SECRET + ':' + removed]);
  function wrapAll(target, through) {
    const keys = names(target);
    for (let k = 0; k < keys.length; k++) {
      const key = keys[k], slot = describe(target, key);
      if (!slot || typeof slot.value !== 'function') continue;
      let cut;
      if (key === 'context') {
        cut = function () { const made = named(0); wrapAll(made, made); return made; };
      } else if (typeof through[key] !== 'function') {
        continue;  // console.createTask: writes no message
      } else {
        const real = through[key];
        cut = function (...args) {
          let budget = BUDGET, removed = 0;
          for (let i = 0; i < args.length; i++) {
            const arg = args[i];
            if (typeof arg !== 'string') continue;
            if (arg.length > budget) { args[i] = slice(arg, 0, budget); removed += arg.length - budget; budget = 0; }
            else budget -= arg.length;
          }
          if (!removed) return apply(real, through, args);
          const once = named(removed);
          return apply(once[key], once, args);
        };
      }
      define(target, key, { __proto__: null, value: cut, writable: slot.writable, configurable: slot.configurable,
        enumerable: slot.enumerable });
    }
  }
  const main = named(0);
  wrapAll(console, main);
})();
"""

_CONTEXT = re.compile(r"^(?P<secret>[0-9a-f]{32}):(?P<removed>\d{1,16})#")


def new_secret() -> str:
    """The per-page secret a cut message's console context is named with (the page cannot read the script's
    closure, so it cannot pass a message of its own off as cut)."""
    return secrets.token_hex(16)


def console_cut_script(secret: str, budget: int) -> str:
    """The init script that cuts console messages in the page to ``budget`` characters of string arguments each
    (module docstring)."""
    return _CUT_SCRIPT % {"secret": json.dumps(secret), "budget": budget}


@dataclass
class ConsoleMessage:
    """One console message as the recorder keeps it: its type, text, location and how many characters of its
    text the page-side cut removed (0: none, or it did not come through the cut)."""

    type: str
    text: str
    location: dict[str, Any]
    removed: int = 0


def reported(event: dict[str, Any]) -> bool:
    """Whether Playwright would report this ``Runtime.consoleAPICalled`` or ``Log.entryAdded`` event as a page's
    console message: not one without an execution context, nor a worker's log entry (Playwright reports those
    from the worker)."""
    if "entry" in event:
        return (event.get("entry") or {}).get("source") != "worker"
    return event.get("executionContextId") != 0


def from_console_api(event: dict[str, Any], secret: str) -> ConsoleMessage:
    """A ``Runtime.consoleAPICalled`` event as a message. Through the cut, the top frame of its stack is the
    wrapper's, so the caller is the next."""
    removed, skip = 0, 0
    match = _CONTEXT.match(str(event.get("context") or ""))
    if match and secrets.compare_digest(match["secret"], secret):
        removed, skip = int(match["removed"]), 1
    args = event.get("args") or []
    frames = (event.get("stackTrace") or {}).get("callFrames") or []
    return ConsoleMessage(
        type=str(event.get("type", "log")),
        text=" ".join(render_preview(arg) for arg in args if isinstance(arg, dict)),
        location=_location(frames[skip] if len(frames) > skip else None),
        removed=removed,
    )


def from_playwright(message: Any) -> ConsoleMessage:
    """A Playwright console message (a worker's: the page-side cut does not reach workers) as a message."""
    return ConsoleMessage(type=str(message.type), text=str(message.text), location=dict(message.location or {}))


def from_log_entry(event: dict[str, Any]) -> ConsoleMessage:
    """A ``Log.entryAdded`` event (the browser's own messages: a failed request, a violation) as a message, as
    Playwright reports it."""
    entry = event.get("entry") or {}
    location = _playwright_location(str(entry.get("url") or ""), int(entry.get("lineNumber") or 0), 0)
    return ConsoleMessage(type=str(entry.get("level", "info")), text=str(entry.get("text", "")), location=location)


def _location(frame: dict[str, Any] | None) -> dict[str, Any]:
    if frame is None:
        frame = {}
    return _playwright_location(
        str(frame.get("url", "")), int(frame.get("lineNumber", 0)), int(frame.get("columnNumber", 0))
    )


def _playwright_location(url: str, line: int, column: int) -> dict[str, Any]:
    """A location as Playwright's Python ``ConsoleMessage.location`` gives it (each number under two names)."""
    return {"url": url, "line": line, "column": column, "lineNumber": line, "columnNumber": column}


def render_preview(remote: dict[str, Any]) -> str:
    """A DevTools ``RemoteObject`` as text, the way Playwright renders a console argument (the message's text is
    these joined by spaces)."""
    if remote.get("type") == "undefined":
        return "undefined"
    if remote.get("subtype") == "node":  # Playwright makes an element handle, which has no preview of its own
        return "JSHandle@node"
    if "value" in remote:
        return js_string(remote["value"])
    if remote.get("unserializableValue"):
        return str(remote["unserializableValue"])
    preview = remote.get("preview")
    if remote.get("description") == "Object" and isinstance(preview, dict):
        return "{" + ", ".join(f"{p.get('name')}: {p.get('value')}" for p in preview.get("properties", [])) + "}"
    if remote.get("subtype") == "array" and isinstance(preview, dict):
        return _sparse_array(preview.get("properties", []))
    return str(remote.get("description", ""))


def _sparse_array(properties: list[dict[str, Any]]) -> str:
    entries: list[tuple[int, Any]] = []
    for prop in properties:
        name = str(prop.get("name", ""))
        if name.isdigit():
            entries.append((int(name), prop.get("value")))
    entries.sort(key=lambda entry: entry[0])
    tokens: list[str] = []
    last = -1
    for index, value in entries:
        gap = index - last - 1
        if gap == 1:
            tokens.append("empty")
        elif gap > 1:
            tokens.append(f"empty x {gap}")
        tokens.append(js_string(value))
        last = index
    return "[" + ", ".join(tokens) + "]"


def js_string(value: Any) -> str:
    """JavaScript's ``String(value)`` of a JSON value (what a primitive console argument reads as)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float) or (isinstance(value, int) and abs(value) >= 10**21):
        return _js_number(float(value))
    if isinstance(value, (list, dict)):  # only a JSON value can get here; JavaScript would say [object Object]
        return json.dumps(value)
    return str(value)


def _js_number(number: float) -> str:
    """JavaScript's text of a number: the shortest digits that read back as it (Python's repr finds the same
    ones), with an exponent only outside 1e-7..1e21."""
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    _, figures, power = Decimal(repr(abs(number))).normalize().as_tuple()
    digits = "".join(map(str, figures))
    point = len(digits) + int(power)  # the decimal point goes after this many digits
    if -6 < point <= 21:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{mantissa}e{'+' if point > 0 else '-'}{abs(point - 1)}"
