"""The held-preview options every command that can keep its sandbox up shares (``run``, ``recipe-run``,
``boot``, ``site open``): what they mean, how they fill a run request, what is printed once the sandbox is
held, and how a signal releases the hold (docs/sites.md, "Held previews")."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from codebox_tui.cli.output import emit_json, progress
from codebox_tui.contracts.runtime import BootOutput, RuntimeEvent
from codebox_tui.durations import parse_duration
from codebox_tui.errors import CodeboxError
from codebox_tui.lifecycle import OpenRun, RunRequest, RunService
from codebox_tui.lifecycle.request import public_url_from_text
from codebox_tui.recipes.run import apply_blueprint

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


def _human_event(event: RuntimeEvent) -> None:
    data = event.data or {}
    if event.type == "runtime.boot-progress":
        progress(f"  boot: {data.get('phase')}" + (f" ({data['ms']} ms)" if "ms" in data else ""))
    elif event.type == "runtime.ready":
        progress(
            f"  ready in {data.get('bootMs')} ms — WordPress {data.get('wordpressVersion')}, "
            f"PHP {data.get('phpVersion')} at {data.get('previewUrl')}"
        )
    elif event.type == "command.started":
        progress(f"  running {data.get('command')} {' '.join(data.get('args', []))}")
    elif event.type in ("command.finished", "command.failed"):
        progress(f"  {data.get('command')} exited {data.get('exitCode')} in {data.get('durationMs')} ms")
    elif event.type == "command.denied":
        progress(f"  denied: {data.get('message')}")
    elif event.type == "artifacts.capturing":
        progress("  capturing the artifact bundle")


class HumanBootProgress:
    """The progress of a held boot (``boot``, ``site open``): the indented lines of :func:`_human_event`, no phases."""

    def phase(self, name: str, detail: str = "") -> None:
        pass

    def on_event(self, event: Any) -> None:
        _human_event(event)


def hold_and_capture(request: RunRequest, hold_text: str, *, json_out: bool) -> OpenRun:
    """Boot ``request`` (its ``restore`` snapshot put back first), apply its blueprint, hold it until the hold
    expires, Ctrl-C or SIGTERM, then capture its bundle (when ``request.capture``), dispose, and say where the
    bundle is. With ``json_out`` one wp-codebox/boot/v1 document is printed once it is held. A failure before the
    hold is raised once the run is recorded (the CLI prints it, as text or a cli-failure document)."""
    assert request.hold_s is not None
    hold_s = request.hold_s
    failure: CodeboxError | None = None
    with sigterm_interrupts(), RunService().open(request, progress=None if json_out else HumanBootProgress()) as run:
        try:
            sandbox = run.boot()
            if request.blueprint:
                apply_blueprint(run, request.blueprint)
                run.site_state.rebase_files()  # what the blueprint wrote is the set-up, not the held session's
        except KeyboardInterrupt:
            run.session.emit("runtime.hold-ended", {"reason": "interrupted"})
            raise
        except CodeboxError as error:
            run.error, run.status, failure = error, "failed", error
        if failure is None:
            output = BootOutput(
                success=True,
                runtime=run.session.runtime_info(),
                previewUrl=sandbox.preview_url,
                holdSeconds=hold_s,
                artifacts={"directory": str(run.session.run_dir)},
            )

            def held() -> None:
                if json_out:
                    emit_json(output)
                announce_held(run, hold_text)

            run.hold(hold_s, on_held=held)
            if request.capture:
                run.capture()
    if failure is not None:
        raise failure
    outcome = run.outcome
    if outcome is not None and outcome.bundle_id is not None:
        progress(
            f"codebox: bundle {outcome.bundle_id} in {outcome.run_dir}"
            + (f"; review it with: codebox review show @{outcome.inbox_key}" if outcome.inbox_key else "")
        )
    return run
