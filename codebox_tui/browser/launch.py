"""Launching Debian's Chromium through Playwright, and the evidence recorder shared by probes and actions.

Playwright cannot download browsers here, so every launch names ``/usr/bin/chromium`` (override with
``CODEBOX_CHROMIUM``). The recorder keeps console messages, page errors, network requests and
performance metrics, and blocks every request that leaves the sandbox preview's origin.
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

from codebox_tui.errors import BadInputError, CodeboxError, ExitCode
from codebox_tui.settings import get_settings

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


class BrowserUnavailableError(CodeboxError):
    exit_code = ExitCode.SANDBOX_FAILURE


def chromium_path() -> str:
    path = get_settings().chromium
    if not (Path(path).is_file() and os.access(path, os.X_OK)) and not shutil.which(path):
        raise BrowserUnavailableError(
            f"Chromium not found at {path}", code="browser-unavailable", field="CODEBOX_CHROMIUM",
            details={"hint": "install Debian's chromium package (apt-get install chromium)"},
        )
    return path


def parse_viewport(value: str | None) -> dict[str, int]:
    if not value:
        return {"width": 1280, "height": 800}
    width, sep, height = value.lower().partition("x")
    if not sep or not width.isdigit() or not height.isdigit() or not (0 < int(width) <= 10000) or not (
            0 < int(height) <= 10000):
        raise BadInputError(f"viewport must look like 1280x800, got {value!r}", code="invalid-arg", field="viewport")
    return {"width": int(width), "height": int(height)}


def resolve_url(base: str, url: str | None) -> str:
    """A path or absolute URL on the preview; absolute URLs must share the preview's origin."""
    target = urljoin(base.rstrip("/") + "/", (url or "/").lstrip("/")) if not (url or "").startswith(
        ("http://", "https://")) else str(url)
    if _origin(target) != _origin(base):
        raise BadInputError(f"URL {url!r} is outside the sandbox preview {base}", code="invalid-arg", field="url")
    return target


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme, parts.netloc


@dataclass
class Recorder:
    """Collects page evidence while a page is driven; writes the evidence files at the end."""

    origin_url: str
    console: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    network: list[dict[str, Any]] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    _pending: dict[int, dict[str, Any]] = field(default_factory=dict)

    def _t(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    def attach(self, context: Any, page: Any) -> None:
        origin = _origin(self.origin_url)

        def route(route_: Any) -> None:
            url = route_.request.url
            if _origin(url) == origin or url.startswith(("data:", "blob:", "about:")):
                route_.continue_()
            else:
                self.blocked.append(url)
                route_.abort("blockedbyclient")

        context.route("**/*", route)
        page.on("console", lambda msg: self.console.append(
            {"t": self._t(), "type": msg.type, "text": msg.text, "location": msg.location}))
        page.on("pageerror", lambda err: self.errors.append(
            {"t": self._t(), "message": str(err), "stack": getattr(err, "stack", None)}))
        page.on("request", self._on_request)
        page.on("response", self._on_response)
        page.on("requestfailed", self._on_failed)

    def _on_request(self, request: Any) -> None:
        entry = {"t": self._t(), "method": request.method, "url": request.url, "resourceType": request.resource_type,
                 "status": None}
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
            entry["failure"] = request.failure or "failed"

    def failed_requests(self) -> list[dict[str, Any]]:
        return [e for e in self.network if e.get("failure") or (e.get("status") or 0) >= 400]


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
