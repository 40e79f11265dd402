"""A run: one sandbox, its commands, and the live event stream a viewer can tail.

``events.jsonl`` gets one JSON object per lifecycle step, written and flushed as it happens;
``commands.jsonl`` one ExecutionResult per command; ``logs/runtime.log`` and ``logs/commands.log``
are the human-readable twins. Secret values are redacted before anything is written.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codebox_tui.bundle import layout
from codebox_tui.bundle.baseline import take_baselines
from codebox_tui.bundle.capture import capture_bundle
from codebox_tui.contracts.common import new_id, utc_now_iso
from codebox_tui.contracts.runtime import (
    ENVELOPE_OUTPUT_REF,
    CommandError,
    CommandResultEnvelope,
    ExecutionResult,
    RuntimeEvent,
    RuntimeInfo,
)
from codebox_tui.errors import BadInputError, CodeboxError, HostIOError, PolicyDeniedError, SandboxError
from codebox_tui.runtime import mount_guard
from codebox_tui.runtime.backend import Backend, Sandbox, SandboxSpec
from codebox_tui.runtime.backends import make_backend
from codebox_tui.runtime.catalog import get_command, handler_for, parse_args
from codebox_tui.runtime.confinement import drops_to_sandbox_uid
from codebox_tui.runtime.mounts import PrivateCopy, new_copies_dir, remove_tree
from codebox_tui.runtime.outcome import CommandOutcome
from codebox_tui.runtime.owner_journal import OwnerJournal, restore_abandoned
from codebox_tui.runtime.policy import Redactor, check_command, check_secret_values
from codebox_tui.runtime.reaper import reap_in_background
from codebox_tui.runtime.sandbox_dirs import claim_owned_dir
from codebox_tui.runtime.sandbox_ids import SandboxId, allocate, host_uid
from codebox_tui.runtime.sandbox_owner import HandedOver, hand_back, hand_over
from codebox_tui.runtime.special_modes import SPECIAL_MODE_FLAG, special_mode_entries, strip_new_special_modes
from codebox_tui.settings import get_settings

EventCallback = Callable[[RuntimeEvent], None]
# review risk flag: the sandbox's PHP hit CODEBOX_SANDBOX_WRITE_BUDGET (node/writeguard.mjs)
WRITE_BUDGET_FLAG = "write-budget-exceeded"


@dataclass
class EvidenceFile:
    """An extra file a handler wrote under ``run_dir`` for the bundle (e.g. files/browser/screenshot.png)."""

    path: str
    kind: str
    contentType: str


def _baselines_dir() -> Path:
    return claim_owned_dir(get_settings().home / "baselines", "baselines-")


def cap_output(text: str, limit: int) -> tuple[str, dict[str, int] | None]:
    """Keep the head and a short tail of ``text`` within ``limit`` UTF-8 bytes (the sidecar applies the
    same cap before sending; this covers handlers that produce output in Python)."""
    if len(text) * 4 <= limit:
        return text, None
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= limit:
        return text, None
    tail = min(64 * 1024, limit // 4)
    head = limit - tail
    omitted = len(raw) - head - tail
    marker = f"\n[codebox: output truncated: {omitted} of {len(raw)} bytes omitted]\n"
    kept = raw[:head].decode("utf-8", "replace") + marker + raw[len(raw) - tail :].decode("utf-8", "replace")
    return kept, {"totalBytes": len(raw), "keptBytes": head + tail, "omittedBytes": omitted, "limitBytes": limit}


class RunSession:
    """Context manager: boots lazily, runs commands under the policy, disposes on exit."""

    def __init__(
        self,
        spec: SandboxSpec,
        artifacts_root: Path,
        *,
        on_event: EventCallback | None = None,
        backend: Backend | None = None,
    ) -> None:
        check_secret_values(spec.secret_env)  # before anything is written (README, docs/security-secrets.md)
        self.spec = spec
        self.runtime_id = new_id("runtime")
        self.run_dir = Path(artifacts_root).resolve() / self.runtime_id
        try:
            self.run_dir.mkdir(parents=True, exist_ok=False)
            (self.run_dir / "logs").mkdir()
        except OSError as error:
            raise BadInputError(
                f"cannot create the run folder under {artifacts_root}: {error.strerror or error} "
                f"({error.filename or self.run_dir}); expected a writable folder",
                code="artifacts-dir-unusable",
                field="--artifacts",
            ) from error
        self.created_at = utc_now_iso()
        self.on_event = on_event
        self._backend = backend
        self._sandbox: Sandbox | None = None
        self._lock = threading.RLock()  # guards the stream files
        self._boot_lock = threading.Lock()  # one boot at a time (progress events still flow)
        # :meth:`kill` and the end of a boot: whichever comes second aborts the sandbox
        self._kill_lock = threading.Lock()
        self._killed: str | None = None  # why the session was killed (no sandbox boots or runs after it)
        self.redact = Redactor(list(spec.secret_env.values()))
        self.evidence: list[EvidenceFile] = []
        # review risk flags raised outside the capture (the site-state diff: lifecycle/site_state.py)
        self.extra_risk_flags: list[str] = []
        self.test_suites: list[Any] = []
        self.test_sites: dict[str, bytes] = {}  # installed WP test sites kept per sandbox (runtime/phpunit.py)
        self.executions: list[ExecutionResult] = []
        self.truncations: list[dict[str, Any]] = []  # outputs the cap cut (recorded in the bundle)
        self.baselines: list[Any] = []
        # Baseline packs hold copies of the user's files: kept under CODEBOX_HOME with this process
        # recorded as owner, so a run killed by SIGKILL leaves nothing the next run does not sweep.
        self._scratch = _baselines_dir()
        self._copies_dir: Path | None = None  # the private copies' own folder (see _take_baselines)
        self._private_copies: list[PrivateCopy] = []
        self._leftovers: list[Path] = []  # a stopped sandbox's folders, removed by the reaper at close()
        self.reaper_pid: int | None = None
        # what already carried setuid/setgid/sticky bits before the boot, per written folder (_strip_special_modes)
        self._special_before: dict[int, set[str]] = {}
        # :live folders handed to the sandbox's host uid for its life (runtime/sandbox_owner.py; as root only)
        self._live_handed: list[HandedOver] = []
        self._owner_journal: OwnerJournal | None = None  # the same, on disk for a killed run (runtime/owner_journal.py)
        # the host uid those folders go to, taken before the boot and given up after they are back (as root only)
        self._host_id: SandboxId | None = None
        self._events = open(self.run_dir / layout.EVENTS, "a", encoding="utf-8")
        self._commands = open(self.run_dir / layout.COMMANDS, "a", encoding="utf-8")
        self._runtime_log = open(self.run_dir / "logs" / "runtime.log", "a", encoding="utf-8")
        self._commands_log = open(self.run_dir / "logs" / "commands.log", "a", encoding="utf-8")
        self._commands_logged = 0
        self.status = "created"
        self.closed = False
        # called once, right after boot, with the boot's seconds (lifecycle/service.py: site state)
        self.after_boot: list[Callable[[float], None]] = []
        self.emit(
            "runtime.created",
            {
                "runtimeId": self.runtime_id,
                "wp": spec.wp,
                "php": spec.php,
                "policy": spec.policy.model_dump(mode="json"),
                "mounts": [m.model_dump(mode="json") for m in spec.mounts],
            },
        )
        for index, mount in enumerate(spec.mounts):
            self.emit(
                "runtime.mounted",
                {
                    "index": index,
                    "source": mount.source,
                    "target": mount.target,
                    "mode": mount.mode,
                    "writeMode": mount.write_mode,
                },
            )

    # -- events -------------------------------------------------------------------------------
    def emit(self, type: str, data: dict[str, Any] | None = None, level: str = "info") -> RuntimeEvent:
        event = RuntimeEvent(id=new_id("event"), type=type, timestamp=utc_now_iso(), level=level, data=data)
        line = self.redact.json_text(event.model_dump(mode="json", exclude_none=True), sort_keys=True)
        with self._lock:
            if not self._events.closed:
                self._write(self._events, line + "\n")
                compact = json.dumps(data, sort_keys=True, separators=(",", ":")) if data else ""
                self._write(self._runtime_log, f"[{event.timestamp}] {type} {compact}".rstrip() + "\n")
        if self.on_event:
            self.on_event(RuntimeEvent.model_validate_json(line))
        return event

    # -- lifecycle ----------------------------------------------------------------------------
    @property
    def backend(self) -> Backend:
        if self._backend is None:
            self._backend = make_backend("playground")
        return self._backend

    @property
    def sandbox(self) -> Sandbox:
        return self._sandbox if self._sandbox is not None else self.boot_sandbox()

    @property
    def booted(self) -> bool:
        return self._sandbox is not None

    def runtime_info(self) -> RuntimeInfo:
        backend = getattr(self.backend, "name", "wordpress-playground")  # native or wordpress-playground
        env: dict[str, Any] = {"kind": "wordpress", "name": backend, "wp": self.spec.wp, "php": self.spec.php}
        if self.spec.env:
            env["runtimeEnv"] = dict(self.spec.env)  # not secret: recorded with its values
        if self._sandbox is not None:
            env["version"] = self._sandbox.wordpress_version
            env["wordpressVersion"] = self._sandbox.wordpress_version
            env["phpVersion"] = self._sandbox.php_version
        return RuntimeInfo(
            id=self.runtime_id,
            backend=backend,
            environment=env,
            createdAt=self.created_at,
            status=self.status,
            previewUrl=(self._sandbox.preview_url or None) if self._sandbox else None,
        )

    def _take_baselines(self) -> SandboxSpec:
        """Baselines of the read-write mounts and, in the same step, the private copies of the
        copy-on-write ones (README, "Mounts"); returns the spec to boot (with those copies)."""
        copy_indexes = [i for i, m in enumerate(self.spec.mounts) if m.mode == "readwrite" and not m.live]
        copies: dict[int, PrivateCopy] = {}
        if self._copies_dir is not None:  # an earlier boot attempt of this session failed
            remove_tree(self._copies_dir)
            self._copies_dir = None
        if copy_indexes:
            settings = getattr(self._backend, "settings", None) or get_settings()
            self._copies_dir = new_copies_dir(settings.home / "sandboxes")
            for index in copy_indexes:
                path = self._copies_dir / f"mount-{index}"
                copies[index] = PrivateCopy(index, path, path)
        self._private_copies = list(copies.values())
        started = time.monotonic()
        self.baselines = list(take_baselines(self.spec.mounts, self._scratch, {i: c.staged for i, c in copies.items()}))
        self.emit(
            "artifacts.baselines",
            {
                "count": len(self.baselines),
                "privateCopies": len(copies),
                "ms": int((time.monotonic() - started) * 1000),
            },
        )
        self._special_before = {index: special_mode_entries(folder) for index, folder in self._written_folders()}
        home = (getattr(self._backend, "settings", None) or get_settings()).home
        for folder in restore_abandoned(home):  # before this run hands over the same folder again
            self.emit("runtime.owners-restored", {"folder": str(folder)})
        live = any(m.mode == "readwrite" and m.live for m in self.spec.mounts)
        if self._host_id is None and live and drops_to_sandbox_uid():
            # the uid the live folders are handed to: a Playground sidecar's, or one for the sandbox alone
            reserve = getattr(self.backend, "host_id_for", None)
            self._host_id = self.spec.host_id = reserve(self.spec) if reserve is not None else allocate()
        for mount in self.spec.mounts:
            if mount.mode == "readwrite" and mount.live:
                if self._owner_journal is None:
                    # on disk, and with this process's mount guard, which gives it back if this process is killed
                    self._owner_journal = OwnerJournal(home, mount_guard.watch_journal, mount_guard.unwatch_journal)
                handed = hand_over(
                    Path(mount.source), host_uid(self._host_id), record=True, journal=self._owner_journal.record
                )
                if handed is not None:
                    self._live_handed.append(handed)
        return dataclasses.replace(self.spec, private_copies=copies) if copies else self.spec

    def _written_folders(self) -> list[tuple[int, Path]]:
        """The host folders the sandbox writes, by mount index: ``:live`` sources and private copies."""
        live = [(i, Path(m.source)) for i, m in enumerate(self.spec.mounts) if m.mode == "readwrite" and m.live]
        return [*live, *((copy.index, copy.path) for copy in self._private_copies)]

    def _strip_special_modes(self) -> None:
        """After the sandbox is gone: no file it wrote keeps a setuid/setgid/sticky bit (runtime/special_modes.py);
        the first time any is found, the run gets the ``special-mode-bits`` risk flag."""
        for index, folder in self._written_folders():
            try:
                stripped = strip_new_special_modes(folder, self._special_before.get(index, set()))
            except OSError as error:
                self.emit("runtime.special-modes-unchecked", {"mount": index, "error": str(error)}, level="error")
                continue
            if not stripped:
                continue
            if SPECIAL_MODE_FLAG not in self.extra_risk_flags:
                self.extra_risk_flags.append(SPECIAL_MODE_FLAG)
            self.emit(
                "sandbox.special-mode-bits",
                {"mount": index, "paths": stripped[:100], "count": len(stripped)},
                level="warning",
            )

    def _hand_back_live_folders(self) -> None:
        """After the sandbox is gone: each ``:live`` folder's entries get their owners back (as root only)."""
        for handed in self._live_handed:
            try:
                hand_back(handed)
            except OSError as error:
                self.emit(
                    "runtime.owners-not-restored", {"folder": str(handed.root), "error": str(error)}, level="error"
                )
            else:
                if self._owner_journal is not None:
                    self._owner_journal.given_back(handed)
        self._live_handed = []
        if self._owner_journal is not None:
            self._owner_journal.close()
        if self._host_id is not None:  # the sandbox is gone: its uid is free again (a sidecar holds its own share)
            self._host_id.release()
            self._host_id = self.spec.host_id = None

    def mount_dir(self, index: int) -> Path:
        """The host folder that ``spec.mounts[index]`` shows the sandbox: the private copy of a
        copy-on-write mount (wherever it is now), else the mount's own source. A flow that changes the
        sandbox's files from the host mid-run (evaluate-patch applies the contributor's patch) writes
        here, never into the user's folder."""
        for copy in self._private_copies:
            if copy.index == index:
                return copy.path
        return Path(self.spec.mounts[index].source)

    def boot_sandbox(self) -> Sandbox:
        """Boot the sandbox once (baselines first); then run each ``after_boot`` hook with the boot's
        seconds, before any command can run (the run lifecycle takes its site-state summary there)."""
        with self._boot_lock:
            if self._sandbox is not None:
                return self._sandbox
            if self._killed is not None:  # cancelled before it booted: nothing boots
                raise SandboxError(f"The sandbox {self._killed}", code="sandbox-aborted")
            begun = time.monotonic()
            prepare = getattr(self.backend, "prepare", None)
            if prepare is not None:
                prepare(self.spec)  # e.g. start the Node sidecar while the baselines are taken
            try:
                boot_spec = self._take_baselines()
            except OSError as error:
                raise HostIOError(
                    f"cannot copy or snapshot a read-write mount: {error.strerror or error} "
                    f"({error.filename or 'a mount'}); expected a readable folder and free disk space",
                    code="mount-copy-failed",
                    field="mounts",
                ) from error
            self.emit("runtime.boot-started", {"wp": self.spec.wp, "php": self.spec.php})
            started = time.monotonic()

            def progress(phase: str, data: dict[str, Any]) -> None:
                self.emit(
                    "runtime.boot-progress",
                    {"phase": phase, **data},
                    level="debug" if phase in ("mounting", "staging-readonly-mount") else "info",
                )

            try:
                sandbox = self.backend.boot(boot_spec, progress)
            except CodeboxError as error:
                self.status = "failed"
                self.emit("runtime.error", {"phase": "boot", **error.to_dict()}, level="error")
                raise
            with self._kill_lock:
                self._sandbox = sandbox
                killed = self._killed
            if killed is not None:  # cancelled while it booted: it runs nothing (disposed with the session)
                sandbox.abort(killed)
                raise SandboxError(f"The sandbox {killed}", code="sandbox-aborted")
            self.status = "running"
            self.emit(
                "runtime.ready",
                {
                    "previewUrl": self._sandbox.preview_url,
                    "wordpressVersion": self._sandbox.wordpress_version,
                    "phpVersion": self._sandbox.php_version,
                    "bootMs": int((time.monotonic() - started) * 1000),
                },
            )
            for hook in self.after_boot:
                hook(time.monotonic() - begun)
            return self._sandbox

    def admit(self, command: str, args: list[str] | None = None) -> None:
        """The one runtime-policy gate (docs/contracts.md, "Runtime policy"): raise PolicyDeniedError unless
        the policy allows ``command``, recording the denial (a ``command.denied`` event and a failed
        execution). Every command runs through :meth:`execute`, which admits it before anything boots; the
        run lifecycle also admits a whole command list up front, so a denied later command boots nothing."""
        try:
            check_command(self.spec.policy, command)
        except PolicyDeniedError as error:
            command_id, now = new_id("command"), utc_now_iso()
            self.emit("command.denied", {"id": command_id, "command": command, **error.to_dict()}, level="error")
            self._record(
                ExecutionResult(
                    id=command_id,
                    command=command,
                    args=list(args or []),
                    exitCode=1,
                    stdout="",
                    stderr=error.message,
                    result=CommandResultEnvelope(
                        status="error", error=CommandError(code=error.code, message=error.message, data=error.details)
                    ),
                    startedAt=now,
                    finishedAt=now,
                    durationMs=0,
                )
            )
            raise

    def execute(self, command: str, args: list[str] | None = None, timeout_s: float | None = None) -> ExecutionResult:
        """Run one catalog command: admitted by the policy first (:meth:`admit`), then the sandbox boots
        (lazily) and the command runs; every outcome is recorded."""
        args = list(args or [])
        timeout = timeout_s if timeout_s is not None else get_settings().command_timeout_s
        command_id = new_id("command")
        spec = get_command(command)
        self.admit(command, args)
        parsed = parse_args(spec, args)
        self.boot_sandbox()  # boot lazily, before the clock for this command starts
        started_at, started = utc_now_iso(), time.monotonic()
        self.emit("command.started", {"id": command_id, "command": command, "args": args})
        handler = handler_for(spec.id)
        error_info: CodeboxError | None = None
        try:
            outcome = handler(self, parsed, timeout)
        except CodeboxError as error:
            error_info = error
            outcome = CommandOutcome(stdout="", stderr=error.message, exit_code=1)
        if self.check_write_budget(command_id):  # the command hit it: it failed, whatever PHP made of that
            note = "codebox: the sandbox's write budget was exceeded; later writes failed (Disk quota exceeded)"
            outcome = dataclasses.replace(
                outcome,
                exit_code=outcome.exit_code or 1,
                stderr=f"{outcome.stderr}\n{note}" if outcome.stderr else note,
            )
        duration = int((time.monotonic() - started) * 1000)
        limit = int(get_settings().max_command_output_bytes)
        truncated = dict(outcome.truncated or {})
        raw_stdout, cut = cap_output(outcome.stdout, limit)
        if cut and "stdout" not in truncated:
            truncated["stdout"] = cut
        raw_stderr, cut = cap_output(outcome.stderr, limit)
        if cut and "stderr" not in truncated:
            truncated["stderr"] = cut
        stdout, stderr = self.redact(raw_stdout), self.redact(raw_stderr)
        json_value = outcome.json
        if json_value is None and not truncated and stdout.strip()[:1] in ("{", "["):
            try:
                json_value = json.loads(stdout)
            except ValueError:
                json_value = None
        # the parsed value is redacted again: a JSON escape could decode to a secret (README "Policy")
        json_value = self.redact.value(json_value)
        diagnostics: dict[str, Any] = {
            "command": command,
            "timing": {"startedAt": started_at, "finishedAt": utc_now_iso(), "durationMs": duration},
        }
        if truncated:
            diagnostics["outputTruncated"] = truncated
            self.truncations.append({"command": command, "id": command_id, "streams": truncated})
            self.emit(
                "command.output-truncated",
                {"id": command_id, "command": command, "streams": truncated},
                level="warning",
            )
        envelope = CommandResultEnvelope(
            status="ok" if outcome.exit_code == 0 and error_info is None else "error",
            json_=json_value,  # the output itself is the execution's stdout/stderr, kept once
            diagnostics={**diagnostics, "outputRef": dict(ENVELOPE_OUTPUT_REF)},
            artifactRefs=outcome.artifact_refs or None,
            error=CommandError(code=error_info.code, message=self.redact(error_info.message)) if error_info else None,
        )
        result = ExecutionResult(
            id=command_id,
            command=command,
            args=args,
            exitCode=outcome.exit_code,
            stdout=stdout,
            stderr=stderr,
            result=envelope,
            diagnostics={"outputTruncated": truncated} if truncated else None,
            artifactRefs=outcome.artifact_refs or None,
            startedAt=started_at,
            finishedAt=utc_now_iso(),
            durationMs=duration,
        )
        self._record(result)
        level = "info" if result.exitCode == 0 else "error"
        self.emit(
            "command.finished" if error_info is None else "command.failed",
            {
                "id": command_id,
                "command": command,
                "exitCode": result.exitCode,
                "durationMs": duration,
                **({"error": error_info.to_dict()} if error_info else {}),
            },
            level=level,
        )
        if error_info is not None:
            raise error_info
        return result

    def _record(self, result: ExecutionResult) -> None:
        self.executions.append(result)
        with self._lock:
            self._write(
                self._commands,
                self.redact.json_text(result.model_dump(mode="json", by_alias=True, exclude_none=True), sort_keys=True)
                + "\n",
            )
            block = (
                f"[{result.startedAt}] {result.command} {' '.join(result.args)}".rstrip()
                + f"\nexitCode={result.exitCode}\n{result.stdout}\n{result.stderr}"
            )
            self._write(self._commands_log, ("\n---\n" if self._commands_logged else "") + block)
            self._commands_logged += 1

    def _write(self, handle: Any, text: str) -> None:
        """The one way a line reaches a stream file: redacted, written, flushed (caller holds the lock)."""
        handle.write(self.redact(text))
        handle.flush()

    def add_evidence(self, path: str, kind: str, content_type: str) -> Path:
        """Register an evidence file (bundle-relative path under files/) and return its absolute path."""
        target = self.run_dir / path
        target.parent.mkdir(parents=True, exist_ok=True)
        self.evidence.append(EvidenceFile(path=path, kind=kind, contentType=content_type))
        return target

    def kill(self, reason: str = "was cancelled") -> None:
        """Stop the sandbox at once (a running command fails with ``sandbox-aborted``) and let nothing run in
        it any more. Safe from any thread, in any phase: before the boot nothing boots, during the boot the
        sandbox is aborted as soon as the boot returns (:meth:`boot_sandbox`)."""
        with self._kill_lock:
            self._killed = reason
            sandbox = self._sandbox
        if sandbox is not None:
            sandbox.abort(reason)

    def check_write_budget(self, command_id: str | None = None) -> bool:
        """Whether the sandbox's PHP has just hit its write budget (docs/security.md, "What a sandbox may
        write"): the first time, the run gets the ``write-budget-exceeded`` risk flag and an event."""
        check = getattr(self._sandbox, "write_budget_exceeded", None)
        if check is None or WRITE_BUDGET_FLAG in self.extra_risk_flags:
            return False
        try:
            hit = check()
        except SandboxError:
            return False
        if not hit:
            return False
        self.extra_risk_flags.append(WRITE_BUDGET_FLAG)
        self.emit(
            "sandbox.write-budget-exceeded", {**hit, **({"id": command_id} if command_id else {})}, level="warning"
        )
        return True

    def dispose(self) -> None:
        self.check_write_budget()  # writes made outside commands (page loads, browser probes)
        with self._lock:
            sandbox, self._sandbox = self._sandbox, None
        # private copies leave the sandbox's folder first (it is deleted with the sandbox); capture
        # reads them after the sandbox is gone, when nothing can write to them any more
        for copy in self._private_copies:
            try:
                copy.move_out()
            except OSError as error:
                self.emit("runtime.private-copy-lost", {"index": copy.index, "error": str(error)}, level="error")
        if sandbox is not None:
            self.emit("runtime.disposing", {})  # viewers say so while it takes (the live run's progress line)
            started = time.monotonic()
            stop = getattr(sandbox, "stop", None)
            if stop is not None:  # its folders are removed off the critical path, by close()
                self._leftovers += stop()
            else:
                sandbox.dispose()
            self.emit("runtime.disposed", {"disposeMs": int((time.monotonic() - started) * 1000)})
            if errors := getattr(sandbox, "live_mirror_errors", None):  # native: :live changes it could not copy
                self.emit("runtime.live-changes-not-copied", {"errors": errors}, level="error")
            self._strip_special_modes()
        self._hand_back_live_folders()
        if self.status != "failed":
            self.status = "destroyed"

    def capture(self) -> Any:
        """Dispose the sandbox, close the streams and write the artifact bundle."""
        was_booted_info = self.runtime_info()
        self.dispose()
        self.emit("artifacts.capturing", {"runDir": str(self.run_dir)})
        self._close_streams()
        summary = capture_bundle(
            self.run_dir,
            runtime=was_booted_info.model_copy(update={"status": "destroyed"}),
            mounts=self.spec.mounts,
            baselines=self.baselines,
            policy=self.spec.policy,
            metadata=self.spec.metadata,
            secret_values=list(self.spec.secret_env.values()),
            evidence=list(self.evidence),
            test_suites=self.test_suites,
            truncations=self.truncations,
            extra_risk_flags=list(self.extra_risk_flags),
        )
        return summary

    def _close_streams(self) -> None:
        with self._lock:
            for handle in (self._events, self._commands, self._runtime_log, self._commands_log):
                if not handle.closed:
                    handle.close()

    def close(self) -> None:
        """Dispose the sandbox if it still runs, close the streams and hand every folder the run leaves
        (the sandbox's site and staging folders, the baseline packs, the private copies) to one detached
        reaper (runtime/reaper.py): nothing here waits for the deletion. ``reaper_pid`` names it."""
        if self.closed:
            return
        self.closed = True
        try:
            self.dispose()
        finally:
            self._close_streams()
            leftovers, self._leftovers = [*self._leftovers, self._scratch], []
            if self._copies_dir is not None:
                leftovers.append(self._copies_dir)
            self.reaper_pid = reap_in_background(leftovers)

    def __enter__(self) -> RunSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
