"""The held-preview options every command that can keep its sandbox up shares (``run``, ``recipe-run``,
``boot``, ``site open``): what they mean, how they fill a run request, what is printed once the sandbox is
held, and how a signal releases the hold (docs/sites.md, "Held previews"). Holding a booted site with its
blueprint applied (``boot``, ``site open``) is cli/held.py's."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from codebox_tui.cli.output import progress
from codebox_tui.durations import parse_duration
from codebox_tui.lifecycle import OpenRun, RunRequest
from codebox_tui.lifecycle.request import public_url_from_text

PREVIEW_HOLD_HELP = (
    "Keep the sandbox and its live preview up this long after the command (e.g. 90s, 15m, 2h), "
    "until Ctrl-C or SIGTERM; then the bundle is captured. Playground only."
)
PREVIEW_PORT_HELP = "Fixed port for the live preview (default: a free one)."
PREVIEW_PUBLIC_URL_HELP = (
    "The address a browser reaches the held preview by (a tunnel to the preview port): "
    "WordPress's WP_HOME and WP_SITEURL name it, so its links and redirects work there."
)


def apply_preview_options(
    request: RunRequest,
    hold: str | None,
    port: int | None,
    public_url: str | None,
    *,
    hold_flag: str = "--preview-hold",
) -> None:
    """``request`` asks for a held preview: for how long, on which port, under which public address. An option
    not given leaves what the request already asks (a recipe's ``runtime.preview``)."""
    if hold is not None:
        request.hold_s = parse_duration(hold, hold_flag)
    if port is not None:
        request.preview_port = port
    if public_url is not None:
        request.public_url = public_url_from_text(public_url)


def announce_held(run: OpenRun, hold_text: str) -> None:
    """The lines a person needs once the sandbox is held: where to look, how to get in, how to end it. Printed
    on stderr even with ``--quiet`` or ``--json`` (stdout keeps its one document): the address is the point."""
    sandbox = run.sandbox
    public = run.request.public_url
    where = f"{public} (served locally at {sandbox.preview_url})" if public else sandbox.preview_url
    progress(f"codebox: preview at {where} — held for {hold_text}; Ctrl-C or SIGTERM (kill {os.getpid()}) releases it")
    progress(f"codebox: run commands in it with: codebox exec --sandbox {run.session.runtime_id} COMMAND")


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """SIGTERM behaves as Ctrl-C while the block runs: a hold ends as ``interrupted`` and the run goes on to
    capture its bundle (a terminated hold never loses the edits made in it)."""

    def stop(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
