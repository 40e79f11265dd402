"""A held boot (``codebox boot``, ``codebox site open``): boot, apply the blueprint, hold the sandbox for its live
preview until the hold ends, capture its bundle and dispose (docs/sites.md, "Held previews"). A shared module,
not an area: the boot and site areas import it; a one-shot ``codebox run`` does not (no blueprint machinery)."""

from __future__ import annotations

from typing import Any

from codebox_tui.cli.output import emit_json, progress
from codebox_tui.cli.preview import announce_held, sigterm_interrupts
from codebox_tui.contracts.runtime import BootOutput, RuntimeEvent
from codebox_tui.errors import CodeboxError
from codebox_tui.lifecycle import OpenRun, RunRequest, RunService
from codebox_tui.recipes.run import apply_blueprint


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
