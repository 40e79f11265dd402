"""The run lifecycle, one implementation for every caller: boot → commands → (hold) → capture →
verify/seal → register (docs/architecture.md, "Runtime API").

``RunService.run(request)`` does it all in one call (``codebox run``, the Launch screen);
``RunService.open(request)`` yields an :class:`OpenRun` for callers that drive the sandbox step by step
(a recipe's setup, steps and probes; evaluate-patch's tests around a patch) and still leaves tool
mounts, policy, capture, sealing and store registration to the service. No CLI or TUI types here:
progress goes to a :class:`ProgressListener`, cancellation comes through a
:class:`~codebox_tui.lifecycle.request.RunControl`.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from codebox_tui.bundle import layout
from codebox_tui.bundle.seal import append_and_reseal
from codebox_tui.bundle.verify import verify_bundle
from codebox_tui.contracts.common import utc_now_iso
from codebox_tui.contracts.runtime import ArtifactPreview, ExecutionResult, RuntimeInfo
from codebox_tui.contracts.site_state import RiskFlag
from codebox_tui.errors import CodeboxError
from codebox_tui.lifecycle.informational import nothing_to_decide
from codebox_tui.lifecycle.request import CommandStep, RunControl, RunRequest, check_request, settle_runtime
from codebox_tui.lifecycle.site_state import SiteStateRecorder, unclean_flags
from codebox_tui.lifecycle.tools import tool_mounts
from codebox_tui.runtime.backend import Backend, Sandbox, SandboxSpec
from codebox_tui.runtime.backends import backend_name, make_backend
from codebox_tui.runtime.core_checkout import core_checkout_mounts
from codebox_tui.runtime.exec_server import serve_held
from codebox_tui.runtime.policy import Redactor, resolve_secrets
from codebox_tui.runtime.session import RunSession
from codebox_tui.runtime.site_state import restore_snapshot
from codebox_tui.settings import CodeboxSettings, ensure_artifacts_dir, get_settings
from store.inbox import record_run_best_effort

VERIFICATION_EVIDENCE = layout.VERIFICATION_EVIDENCE


class ProgressListener(Protocol):
    """What a progress display implements (``progress_report.StderrProgress`` does): the service's
    own phases and every runtime event of the run (boot phases, commands, capture, dispose)."""

    def phase(self, name: str, detail: str = "") -> None: ...

    def on_event(self, event: Any) -> None: ...


@dataclass
class RunOutcome:
    """What a finished run left: its status (completed, failed, cancelled), its commands, its bundle
    (None when nothing was captured) and its entry in the review inbox."""

    status: str
    runtime: RuntimeInfo
    runtime_id: str
    run_dir: Path
    executions: list[ExecutionResult]
    bundle: Any  # bundle.seal.BundleSummary | None
    error: CodeboxError | None
    redact: Redactor
    timings: dict[str, float] = field(default_factory=dict)
    inbox_key: int | None = None  # the store record's number (`codebox review show @KEY`)
    warnings: list[str] = field(default_factory=list)
    # the site-state risks that keep the verdict from being clean (lifecycle/site_state.unclean_flags)
    site_state_risks: list[RiskFlag] = field(default_factory=list)
    preview: ArtifactPreview | None = None  # where the sandbox was served, and its hold (``run --json``)

    @property
    def success(self) -> bool:
        """The run completed and its site-state diff reads clean (the status says only that it completed)."""
        return self.status == "completed" and not self.site_state_risks

    @property
    def execution(self) -> ExecutionResult | None:
        return self.executions[-1] if self.executions else None

    @property
    def bundle_dir(self) -> Path | None:
        path = getattr(self.bundle, "path", None)
        return Path(path) if path else None

    @property
    def bundle_id(self) -> str | None:
        return getattr(self.bundle, "id", None)

    def failure_text(self) -> str | None:
        """One line saying why the run did not complete (None when it did)."""
        if self.status == "completed":
            return None
        if self.error is not None:
            return self.redact(str(self.error))
        if self.status == "cancelled":
            return "cancelled"
        last = self.execution
        if last is not None and last.exitCode != 0:
            return f"{last.command} exited {last.exitCode}"
        return "the run failed"


class OpenRun:
    """One run in progress, made by :meth:`RunService.open`. The sandbox boots on :meth:`boot` or the
    first :meth:`execute`; :meth:`capture` disposes it and writes the bundle. ``status`` is what the
    store records when the run ends; the caller sets it to ``failed`` when its own checks fail (a
    cancelled run is recorded as cancelled, one left by an exception as failed)."""

    def __init__(
        self,
        request: RunRequest,
        session: RunSession,
        control: RunControl,
        progress: ProgressListener | None,
        *,
        site_state: bool = True,
    ) -> None:
        self.request = request
        self.session = session
        self.control = control
        self.progress = progress
        self.status = "completed"
        self.error: CodeboxError | None = None
        self.summary: Any = None
        self.verification_problem: dict[str, Any] | None = None
        self.timings: dict[str, float] = {}
        self.restored: dict[str, Any] | None = None  # the restore stats of ``request.restore``
        self.outcome: RunOutcome | None = None  # set when the run has ended (after the ``with`` block)
        self.held: dict[str, Any] | None = None  # the hold's start, end and reason (:meth:`hold`)
        self.preview_url: str | None = None  # the booted sandbox's preview (local address)
        # the site-state summaries after boot and before capture (docs/site-state.md, "In every run")
        self.site_state = SiteStateRecorder(session, enabled=site_state)
        session.after_boot.append(self._booted)

    # -- steps ---------------------------------------------------------------------------------
    @property
    def sandbox(self) -> Sandbox:
        return self.session.sandbox if self.session.booted else self.boot()

    @property
    def cancelled(self) -> bool:
        return self.control.cancelled

    def boot(self) -> Sandbox:
        """Boot the sandbox (once); a ``request.restore`` snapshot is put back and the site-state summary is
        taken right after (:meth:`_booted`), however the boot was started."""
        return self.session.boot_sandbox()

    def _booted(self, seconds: float) -> None:
        """The session's ``after_boot`` hook: boot timing, the snapshot to restore, and the site-state
        summary before any command."""
        self.timings.setdefault("bootSeconds", round(seconds, 3))
        self.preview_url = self.preview_url or self.session.sandbox.preview_url or None
        if self.request.restore is not None and self.restored is None:
            self._restore(self.session.sandbox)
        self.site_state.record_before()
        if self.site_state.before is not None:
            self.timings["siteStateSeconds"] = round(self.site_state.seconds, 3)

    def _restore(self, sandbox: Sandbox) -> None:
        """Put ``request.restore`` back into the fresh sandbox (``codebox run --restore``; docs/episodes.md), so the
        run's site-state diff shows what its commands did to the restored site."""
        snapshot = self.request.restore
        started = time.monotonic()
        try:
            stats = restore_snapshot(sandbox, snapshot)
        except CodeboxError as error:
            self.session.emit(
                "runtime.snapshot-restore-failed", {"snapshotId": snapshot.id, **error.to_dict()}, level="error"
            )
            raise
        self.restored = {"snapshotId": snapshot.id, "source": self.request.restore_source, "stats": stats}
        self.timings["restoreSeconds"] = round(time.monotonic() - started, 3)
        self.session.emit(
            "runtime.snapshot-restored",
            {
                "snapshotId": snapshot.id,
                "source": self.request.restore_source,
                "ms": int((time.monotonic() - started) * 1000),
            },
        )

    def execute(
        self, step: CommandStep | str, args: list[str] | None = None, timeout_s: float | None = None
    ) -> ExecutionResult:
        """Run one catalog command. The session owns the policy check (``RunSession.admit``, before it boots
        anything) and boots lazily; this run's site-state summary is taken when it does."""
        if isinstance(step, str):
            step = CommandStep(step, list(args or []), timeout_s)
        return self.session.execute(step.command, step.args, step.timeout_s)

    def hold(self, seconds: float, *, on_held: Callable[[], None] | None = None) -> str:
        """Keep the sandbox and its preview up for ``seconds``, until released or cancelled, or until
        Ctrl-C; returns (and records) why the hold ended: expired, closed, cancelled, interrupted.
        ``on_held`` runs once the hold is recorded (e.g. to print the preview's address)."""
        preview = self.sandbox.preview_url
        self.held = {"holdSeconds": seconds, "heldAt": utc_now_iso()}
        self.session.emit("runtime.held", {"previewUrl": preview, "holdSeconds": seconds})
        # `codebox exec --sandbox ID` reaches a held sandbox through a same-user socket (docs/exec.md)
        server = serve_held(self.session, on_release=self.control.release)
        try:
            if on_held is not None:
                on_held()
            released = self.control.wait_released(seconds)
            reason = "cancelled" if self.control.cancelled else ("closed" if released else "expired")
        except KeyboardInterrupt:
            reason = "interrupted"
        finally:
            if server is not None:
                server.close()
        self.held.update(endedAt=utc_now_iso(), endedBy=reason)
        self.session.emit("runtime.hold-ended", {"reason": reason})
        return reason

    def capture(self, *, verify: bool = False) -> Any:
        """Dispose the sandbox and write the sealed bundle; with ``verify``, verify the bundle, keep the
        result as evidence and seal it again with that file listed (an invalid bundle sets
        ``verification_problem`` and fails the run)."""
        started = time.monotonic()
        if not self.cancelled:  # a cancelled run's sandbox is killed: nothing to summarize
            self.site_state.record_after()
        if self.site_state.before is not None:
            self.timings["siteStateSeconds"] = round(self.site_state.seconds, 3)
        self.summary = self.session.capture()
        if verify and self.summary is not None:
            self._verify_and_reseal()
        self.timings["captureSeconds"] = round(time.monotonic() - started, 3)
        return self.summary

    def _verify_and_reseal(self) -> None:
        """As the reference does, the evidence file records the verification of the bundle before the
        file was added, so its ``verifiedBundleId`` differs from the final id."""
        result = verify_bundle(self.summary.path)
        path = self.session.add_evidence(VERIFICATION_EVIDENCE, "artifact-bundle-verification", "application/json")
        doc = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        doc["verifiedBundleId"] = self.summary.id
        path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        if not result.valid:
            codes = ", ".join(sorted({v.code for v in result.violations}))
            self.verification_problem = {
                "phase": "verify_bundle",
                "error": {
                    "code": "bundle-verification-failed",
                    "evidence": VERIFICATION_EVIDENCE,
                    "message": f"The captured bundle failed verification ({codes})",
                },
            }
            self.status = "failed"
        # only the id-bearing documents and the manifest are rewritten (no second capture)
        self.summary = append_and_reseal(self.summary.path, [self.session.evidence[-1]])


class RunService:
    """Runs :class:`RunRequest`s. ``settings`` and ``backend`` default to the process's own."""

    def __init__(self, settings: CodeboxSettings | None = None, backend: Backend | None = None) -> None:
        self.settings = settings or get_settings()
        self.backend = backend

    def sandbox_spec(self, request: RunRequest, tools_dir: Path) -> SandboxSpec:
        """The sandbox to boot for ``request``, with the tool mounts its commands need."""
        request = settle_runtime(request)
        assert request.php is not None  # settled
        policy = request.effective_policy()
        extra = [
            *request.extra_mounts,
            *tool_mounts(request.wanted_tools(), tools_dir, request.tools, self.settings),
            *core_checkout_mounts(request.command_args()),
        ]
        return SandboxSpec(
            mounts=list(request.mounts),
            policy=policy,
            wp=request.wp,
            php=request.php,
            blueprint=request.blueprint,
            preview_port=request.preview_port,
            preview_bind=request.preview_bind,
            site_url=request.public_url,
            metadata=dict(request.metadata),
            boot_timeout_s=request.boot_timeout_s
            if request.boot_timeout_s is not None
            else self.settings.boot_timeout_s,
            secret_env=resolve_secrets(policy),
            extra_mounts=extra,
            env=dict(request.env),
            warm=request.warm,
        )

    @contextmanager
    def open(
        self, request: RunRequest, *, progress: ProgressListener | None = None, control: RunControl | None = None
    ) -> Iterator[OpenRun]:
        """Check the request, stage its tools, make the run's session (nothing boots yet) and yield it;
        on the way out dispose everything and record the run in the store (``run.outcome``)."""
        request = settle_runtime(request)  # the backend and its PHP chosen once, for the spec and the record
        check_request(request)
        control = control or RunControl()
        tools_dir = Path(tempfile.mkdtemp(prefix="codebox-tools-"))
        try:
            spec = self.sandbox_spec(request, tools_dir)
            root = request.artifacts_root if request.artifacts_root is not None else self.settings.artifacts_dir
            backend = self.backend or make_backend(backend_name(request.backend, self.settings), self.settings)
            session = RunSession(
                spec,
                ensure_artifacts_dir(root),
                backend=backend,
                on_event=progress.on_event if progress is not None else None,
            )
        except BaseException:
            shutil.rmtree(tools_dir, ignore_errors=True)
            raise
        run = OpenRun(request, session, control, progress, site_state=self.settings.site_state == "on")
        if progress is not None:
            progress.phase("run", f"{session.runtime_id} → {session.run_dir}")
        undo = control.on_cancel(session.kill)
        failed = False
        try:
            yield run
        except BaseException:
            failed = True
            raise
        finally:
            undo()
            try:
                # the sandbox stops here (fast); its folders are removed after the run is recorded
                session.dispose()
            finally:
                if failed and run.status == "completed":
                    run.status = "failed"
                if control.cancelled:
                    run.status = "cancelled"
                try:
                    run.outcome = self._finish(run)
                finally:
                    try:
                        session.close()  # hands the folders to a detached reaper: nobody waits for it
                    finally:
                        shutil.rmtree(tools_dir, ignore_errors=True)
                    if run.progress is not None and session.reaper_pid is not None:
                        run.progress.phase(
                            "cleanup",
                            f"the sandbox's folders are being removed in the background (pid {session.reaper_pid})",
                        )

    def run(
        self,
        request: RunRequest,
        *,
        progress: ProgressListener | None = None,
        control: RunControl | None = None,
        on_open: Callable[[OpenRun], None] | None = None,
        on_held: Callable[[OpenRun], None] | None = None,
    ) -> RunOutcome:
        """Boot, run ``request.commands`` in order (the first that fails stops the rest), hold the preview
        if asked, capture, register. Errors of the run itself are in the outcome, never raised; bad
        input is raised before anything boots."""
        started = time.monotonic()
        with self.open(request, progress=progress, control=control) as run:
            if on_open is not None:
                on_open(run)
            try:
                for step in request.commands:  # the whole list up front: a denied command boots nothing
                    run.session.admit(step.command, step.args)
                run.boot()
                command_started = time.monotonic()
                for step in request.commands:
                    if run.cancelled or run.execute(step).exitCode != 0:
                        break
                if request.commands:
                    run.timings["commandSeconds"] = round(time.monotonic() - command_started, 3)
                if request.hold_s and not run.cancelled:
                    run.hold(request.hold_s, on_held=(lambda: on_held(run)) if on_held is not None else None)
            except CodeboxError as caught:
                run.error = caught
            if request.capture:
                run.capture()
            executions = run.session.executions
            ran_all = len(executions) == len(request.commands) and all(e.exitCode == 0 for e in executions)
            run.status = "completed" if run.error is None and ran_all else "failed"
        assert run.outcome is not None
        run.outcome.timings["totalSeconds"] = round(time.monotonic() - started, 3)
        return run.outcome

    def _finish(self, run: OpenRun) -> RunOutcome:
        session = run.session
        runtime = session.runtime_info()
        outcome = RunOutcome(
            status=run.status,
            runtime=runtime,
            runtime_id=session.runtime_id,
            run_dir=session.run_dir,
            executions=list(session.executions),
            bundle=run.summary,
            error=run.error,
            redact=session.redact,
            timings=dict(run.timings),
            site_state_risks=unclean_flags(run.site_state.diff),
            preview=_preview(run, runtime),
        )
        if run.request.capture and self.settings.record_runs:
            self._register(run, outcome)
        return outcome

    def _register(self, run: OpenRun, outcome: RunOutcome) -> None:
        """Record the run and its bundle in the review inbox — every captured run, from every caller (best
        effort: the bundle on disk is the evidence, and ``codebox review import`` can still add it)."""
        session, summary = run.session, run.summary

        def warn(message: str) -> None:
            outcome.warnings.append(message)
            if run.progress is not None:
                run.progress.phase("warning", message)

        if run.progress is not None:
            run.progress.phase("inbox", "recording the bundle for review")
        metadata = session.redact.value({"flow": run.request.flow, **session.spec.metadata})
        record = record_run_best_effort(
            warn,
            run_id=session.runtime_id,
            run_dir=session.run_dir,
            status=outcome.status,
            bundle_dir=outcome.bundle_dir,
            metadata=metadata,
            sandbox_session_id=session.spec.metadata.get("sandbox_session_id"),
            started_at=session.created_at,
            bundle_id=getattr(summary, "id", None),
            content_digest=getattr(summary, "content_digest_b", None),
            changed_files=len(getattr(summary, "changed_files", None) or []),
            output_only=summary is not None
            and nothing_to_decide(
                run.request.flow,
                run.request.mounts,
                getattr(summary, "changed_files", None),
                getattr(summary, "skipped", None),
                run.site_state.diff,
            ),
        )
        if record is not None:
            outcome.inbox_key = record.key
            if run.progress is not None:
                run.progress.phase("done", f"review it with: codebox review show @{record.key}")


def _preview(run: OpenRun, runtime: RuntimeInfo) -> ArtifactPreview | None:
    """The run's preview for its output document: None when no sandbox with a preview was booted."""
    local = run.preview_url
    if not local:
        return None
    public = run.request.public_url
    source = "public-url-override" if public else ("live-native" if runtime.backend == "native" else "live-playground")
    return ArtifactPreview(
        url=public or local,
        localUrl=local,
        publicUrl=public,
        lifecycle="held-after-run" if run.held else "destroyed-on-completion",
        source=source,
        **(run.held or {}),
    )
