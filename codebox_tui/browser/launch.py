"""Launching Debian's Chromium through Playwright, and the evidence recorder shared by probes and actions.

Playwright cannot download browsers here, so every launch names Debian's Chromium: its headless shell where it is
installed, else ``/usr/bin/chromium`` (``settings.default_chromium``; override with ``CODEBOX_CHROMIUM``). The
recorder keeps console messages, page errors, network requests and performance metrics, and blocks every request
that leaves the sandbox preview's origin. The page controls every byte of what it records, so each text is cut to
:data:`MAX_EVIDENCE_TEXT_BYTES` and each kind of entry to :data:`MAX_EVIDENCE_ENTRIES` (docs/browser.md,
"Evidence limits").
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from codebox_tui.browser.console_feed import (
    ConsoleMessage,
    console_cut_script,
    from_console_api,
    from_log_entry,
    from_playwright,
    new_secret,
    reported,
)
from codebox_tui.errors import BadInputError, CodeboxError, ExitCode
from codebox_tui.settings import get_settings

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


# The evidence limits: the most of any one page-controlled text kept (a console message, a page error's message or
# stack, a request's URL, a failed step's error), in UTF-8 bytes, and the most entries of each kind (console,
# errors, network, blocked requests) kept per page; later ones are only counted (docs/browser.md).
MAX_EVIDENCE_TEXT_BYTES = 8 * 1024
MAX_EVIDENCE_ENTRIES = 1000
EVIDENCE_KINDS = ("console", "errors", "network", "blocked")


def cap_text(text: str) -> tuple[str, int | None]:
    """``text`` cut to at most :data:`MAX_EVIDENCE_TEXT_BYTES` of UTF-8, and its length in characters when it was
    cut (else None). Only the kept start is ever copied: the whole is neither encoded nor sliced."""
    if len(text) * 4 <= MAX_EVIDENCE_TEXT_BYTES:  # no character takes more than 4 bytes
        return text, None
    head = text[:MAX_EVIDENCE_TEXT_BYTES].encode("utf-8", "surrogatepass")
    if len(head) <= MAX_EVIDENCE_TEXT_BYTES and len(text) <= MAX_EVIDENCE_TEXT_BYTES:
        return text, None
    return head[:MAX_EVIDENCE_TEXT_BYTES].decode("utf-8", "ignore"), len(text)


def capped_entry(entry: dict[str, Any], **texts: Any) -> dict[str, Any]:
    """``entry`` with each page-controlled text of ``texts`` cut by :func:`cap_text`; an entry with a cut text says
    ``"truncated": true`` and the cut texts' lengths in characters (``originalChars``)."""
    cut: dict[str, int] = {}
    for key, value in texts.items():
        if isinstance(value, str):
            value, original = cap_text(value)
            if original is not None:
                cut[key] = original
        entry[key] = value
    if cut:
        entry["truncated"] = True
        entry["originalChars"] = cut
    return entry


class BrowserUnavailableError(CodeboxError):
    exit_code = ExitCode.SANDBOX_FAILURE


def chromium_path() -> str:
    path = get_settings().chromium
    if not (Path(path).is_file() and os.access(path, os.X_OK)) and not shutil.which(path):
        raise BrowserUnavailableError(
            f"Chromium not found at {path}",
            code="browser-unavailable",
            field="CODEBOX_CHROMIUM",
            details={
                "hint": "install Debian's chromium-headless-shell (or chromium) package: "
                "apt-get install chromium-headless-shell"
            },
        )
    return path


def parse_viewport(value: str | None) -> dict[str, int]:
    if not value:
        return {"width": 1280, "height": 800}
    width, sep, height = value.lower().partition("x")
    if (
        not sep
        or not width.isdigit()
        or not height.isdigit()
        or not (0 < int(width) <= 10000)
        or not (0 < int(height) <= 10000)
    ):
        raise BadInputError(f"viewport must look like 1280x800, got {value!r}", code="invalid-arg", field="viewport")
    return {"width": int(width), "height": int(height)}


def resolve_url(base: str, url: str | None) -> str:
    """A path or absolute URL on the preview; absolute URLs must share the preview's origin."""
    target = (
        urljoin(base.rstrip("/") + "/", (url or "/").lstrip("/"))
        if not (url or "").startswith(("http://", "https://"))
        else str(url)
    )
    if _origin(target) != _origin(base):
        raise BadInputError(f"URL {url!r} is outside the sandbox preview {base}", code="invalid-arg", field="url")
    return target


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme, parts.netloc


@dataclass
class Recorder:
    """Collects page evidence while a page is driven; writes the evidence files at the end. Every page-controlled
    text is cut as it arrives (:func:`capped_entry`) and each kind keeps its first :data:`MAX_EVIDENCE_ENTRIES`
    entries; the rest are counted in ``dropped``, without reading their text."""

    origin_url: str
    console: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    network: list[dict[str, Any]] = field(default_factory=list)
    blocked: list[dict[str, Any]] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(EVIDENCE_KINDS, 0))
    started: float = field(default_factory=time.monotonic)
    _pending: dict[int, dict[str, Any]] = field(default_factory=dict)

    def _t(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    def _room(self, kind: str) -> bool:
        """Whether one more ``kind`` entry is kept; if not, it is counted as dropped."""
        if len(getattr(self, kind)) < MAX_EVIDENCE_ENTRIES:
            return True
        self.dropped[kind] += 1
        return False

    def attach(self, context: Any, page: Any) -> None:
        origin = _origin(self.origin_url)

        def route(route_: Any) -> None:
            url = route_.request.url
            if _origin(url) == origin or url.startswith(("data:", "blob:", "about:")):
                route_.continue_()
            else:
                if self._room("blocked"):
                    self.blocked.append(
                        capped_entry({}, url=url) | {"blocked": True, "reason": "outside the sandbox preview"}
                    )
                route_.abort("blockedbyclient")

        context.route("**/*", route)
        # Console messages: cut in the page, read from a DevTools session of our own; Playwright's console event
        # would hand this process (and keep) every argument whole (browser/console_feed.py).
        secret = new_secret()
        page.add_init_script(console_cut_script(secret, MAX_EVIDENCE_TEXT_BYTES))
        feed = context.new_cdp_session(page)

        def on_console_api(event: dict[str, Any]) -> None:
            if reported(event) and self._room("console"):
                self._keep_console(from_console_api(event, secret))

        def on_log_entry(event: dict[str, Any]) -> None:
            if reported(event) and self._room("console"):
                self._keep_console(from_log_entry(event))

        def on_worker_console(message: Any) -> None:
            if self._room("console"):
                self._keep_console(from_playwright(message))

        feed.on("Runtime.consoleAPICalled", on_console_api)
        feed.on("Log.entryAdded", on_log_entry)
        feed.send("Runtime.enable")
        feed.send("Log.enable")
        page.on("worker", lambda worker: worker.on("console", on_worker_console))
        page.on("pageerror", self._on_page_error)
        page.on("request", self._on_request)
        page.on("response", self._on_response)
        page.on("requestfailed", self._on_failed)

    def _keep_console(self, message: ConsoleMessage) -> None:
        location = dict(message.location)
        if isinstance(location.get("url"), str):
            location["url"] = cap_text(location["url"])[0]
        entry = capped_entry({"t": self._t(), "type": message.type}, text=message.text)
        if message.removed:  # cut in the page: its real length is what arrived plus what the cut removed
            entry["truncated"] = True
            entry["originalChars"] = {"text": len(message.text) + message.removed}
        self.console.append(entry | {"location": location})

    def _on_page_error(self, error: Any) -> None:
        if self._room("errors"):
            self.errors.append(
                capped_entry(
                    {"t": self._t()},
                    message=getattr(error, "message", None) or str(error),
                    stack=getattr(error, "stack", None),
                )
            )

    def _on_request(self, request: Any) -> None:
        if not self._room("network"):
            return
        entry = capped_entry({"t": self._t(), "method": request.method}, url=request.url)
        entry.update(resourceType=request.resource_type, status=None)
        self._pending[id(request)] = entry
        self.network.append(entry)

    def _on_response(self, response: Any) -> None:
        entry = self._pending.get(id(response.request))
        if entry is not None:
            entry["status"] = response.status
            entry["durationMs"] = self._t() - entry["t"]

    def _on_failed(self, request: Any) -> None:
        entry = self._pending.get(id(request))
        if entry is not None:
            entry["failure"] = cap_text(request.failure or "failed")[0]

    def failed_requests(self) -> list[dict[str, Any]]:
        return [e for e in self.network if e.get("failure") or (e.get("status") or 0) >= 400]

    def counts(self) -> dict[str, int]:
        """The entries kept of each kind (the summary's ``counts``)."""
        return {
            "console": len(self.console),
            "errors": len(self.errors),
            "requests": len(self.network),
            "failedRequests": len(self.failed_requests()),
            "blockedRequests": len(self.blocked),
        }

    def limits(self) -> dict[str, Any]:
        """The summary's ``evidenceLimits``: the caps, the entries dropped past them and the entries cut."""
        return {
            "maxTextBytes": MAX_EVIDENCE_TEXT_BYTES,
            "maxEntries": MAX_EVIDENCE_ENTRIES,
            "dropped": dict(self.dropped),
            "truncated": {kind: sum(1 for e in getattr(self, kind) if e.get("truncated")) for kind in EVIDENCE_KINDS},
        }


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")


def write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")


def launch(playwright: Any) -> Any:
    try:
        return playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True)
    except CodeboxError:
        raise
    except Exception as exc:  # Playwright raises its own Error type; report it as a sandbox-side failure
        raise BrowserUnavailableError(f"Chromium failed to start: {exc}", code="browser-unavailable") from exc
