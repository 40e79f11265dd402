"""What runs inside one Ray task: one attempt of one batch item, in a private scratch folder of the worker.

The item's kind runs it through the run lifecycle with this worker's own Codebox (its Playground, its
``CODEBOX_HOME``; runs are not recorded here, ``CODEBOX_RECORD_RUNS=false``). The bundle goes back to the
caller as tar bytes with the result; the scratch folder is removed (or swept after a worker is killed:
it records its owner). A failure to boot the sandbox is reported as an infrastructure failure, which the
caller may retry; anything the item itself did wrong (a patch that does not apply, failing tests) is not
(docs/scale-out.md, "Failure behaviour").
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from codebox_tui.batch.kinds import get_kind
from codebox_tui.batch.transfer import MAX_BUNDLE_BYTES, pack_dir
from codebox_tui.bundle import layout
from codebox_tui.contracts.common import utc_now_iso
from codebox_tui.errors import CodeboxError
from codebox_tui.lifecycle import RunControl
from codebox_tui.runtime.mounts import remove_tree
from codebox_tui.runtime.sandbox_dirs import claim_owned_dir
from codebox_tui.settings import reload_settings

# errors that say the machinery failed, not the item: the sidecar would not start or died
INFRA_CODES = ("sidecar-start-timeout", "sidecar-crashed", "node-missing", "confinement-unavailable")


class _Listener:
    """The run's progress, forwarded to the batch's progress board (state changes only) and watched for a
    failed boot."""

    def __init__(self, board: Any, item_id: str, attempt: int) -> None:
        self.board, self.item_id, self.attempt = board, item_id, attempt
        self.ready = False
        self.boot_failure: str | None = None
        self.step = 0

    def send(self, phase: str) -> None:
        if self.board is not None:
            self.board.report.remote(self.item_id, self.attempt, {"phase": phase})

    def phase(self, name: str, detail: str = "") -> None:
        if name in ("warning",):
            self.send(f"{name}: {detail}"[:120])

    def on_event(self, event: Any) -> None:
        kind = getattr(event, "type", None)
        raw = getattr(event, "data", None)
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if kind == "runtime.boot-started":
            self.send("booting")
        elif kind == "runtime.ready":
            self.ready = True
            self.send("ready")
        elif kind == "runtime.error" and data.get("phase") == "boot" and not self.ready:
            self.boot_failure = f"the sandbox did not boot: {data.get('message') or data.get('code')}"
            self.send("boot failed")
        elif kind == "command.started":
            self.step += 1
            self.send(f"step {self.step}: {data.get('command')}")
        elif kind == "artifacts.capturing":
            self.send("capturing")


def run_item(kind_name: str, request: Any, item_id: str, attempt: int, board: Any = None) -> dict[str, Any]:
    """One attempt of one item; the result is plain data (Ray ships it back to the caller)."""
    settings = reload_settings()  # the task's environment (runtime_env) decides, not the worker's first task
    if board is not None:
        board.report.remote(item_id, attempt, {"phase": "started", "pid": os.getpid(), "node": socket.gethostname()})
    started_at, started = utc_now_iso(), time.monotonic()
    work = claim_owned_dir(settings.home / "batch-work", "work-")
    listener = _Listener(board, item_id, attempt)
    out: dict[str, Any] = {
        "itemId": item_id,
        "attempt": attempt,
        "pid": os.getpid(),
        "node": socket.gethostname(),
        "startedAt": started_at,
        "infra": None,
        "error": None,
        "success": False,
        "verdict": "",
        "runtimeId": None,
        "bundleTar": None,
        "summary": {},
    }
    try:
        try:
            result = get_kind(kind_name).run(request, work, listener, RunControl())
        except CodeboxError as error:
            out["error"] = error.to_dict()
            out["verdict"] = "error"
            if error.code in INFRA_CODES or listener.boot_failure:
                out["infra"] = listener.boot_failure or error.message
            return out
        out.update(success=result.success, verdict=result.verdict, runtimeId=result.runtime_id, summary=result.summary)
        if listener.boot_failure and not listener.ready:
            out["infra"] = listener.boot_failure
        if result.bundle_dir is not None and (result.bundle_dir / layout.MANIFEST).is_file():
            out["bundleTar"] = pack_dir(result.bundle_dir, limit=MAX_BUNDLE_BYTES, what="bundle")
        return out
    finally:
        out["seconds"] = round(time.monotonic() - started, 3)
        remove_tree(work)
