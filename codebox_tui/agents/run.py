"""``run_agent_task``: one agent task in one disposable sandbox, on the one run lifecycle
(``RunService.open`` → ``OpenRun`` boot / agent / capture; docs/agent-tasks.md, "How a task runs").

Before boot: the request is checked (workspace mounts, the agent program, the tools), the tool policy and
the tool bridge are built. Then the sandbox boots with the workspace folders mounted read-write as private
copies under ``/workspace``; the agent runs (a host command through the JSON-lines protocol, its tool calls
dispatched to the sandbox, or a PHP script inside the sandbox); the bundle is captured and verified; the
task's documents (transcript, agent result, completion outcome, session envelope, task input, tool bridge)
are written into it, redacted, and the bundle is sealed again. The store records the run with its
``sandbox_session_id`` and ``orchestrator`` like every run; push, deploy, merge and apply-back stay outside.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codebox_tui.agents.host_agent import HostAgentRun, run_host_agent
from codebox_tui.agents.outcome import TaskFacts, agent_result, completion_outcome
from codebox_tui.agents.registry import HostToolRegistry, ToolDispatcher
from codebox_tui.agents.request import AgentTaskRequest, check_agent
from codebox_tui.agents.workspace import WorkspaceContext, parent_only_tools, workspace_tools
from codebox_tui.bundle import layout
from codebox_tui.bundle.seal import append_and_reseal
from codebox_tui.contracts.agent import (
    AgentFailure,
    AgentMessage,
    AgentResult,
    AgentTranscript,
    Blocker,
    CompletionOutcome,
    SandboxSession,
    SessionArtifacts,
    TaskInput,
    ToolBridge,
    TranscriptExecution,
    TranscriptToolCall,
)
from codebox_tui.contracts.runtime import MountSpec, RuntimePolicy
from codebox_tui.errors import BadInputError, CodeboxError, ExitCode
from codebox_tui.lifecycle import CommandStep, OpenRun, ProgressListener, RunControl, RunOutcome, RunRequest, RunService
from codebox_tui.runtime.mounts import validate_mounts

AGENT_DIR = "/codebox-agent"  # where a PHP agent finds task.json, a read-only mount (docs/agent-tasks.md)
AGENT_TASK_FILE = "task.json"
PHP_COMMAND = "wordpress.run-php"


@dataclass
class AgentTaskOutcome:
    """What one task call returns: the session envelope, the completion outcome and agent result (None when
    nothing was captured), the bundle, the run, and the exit code a CLI should end with."""

    session: SandboxSession
    completion_outcome: CompletionOutcome | None
    agent_result: AgentResult | None
    run: RunOutcome
    exit_code: int
    warnings: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        return self.session.status

    @property
    def bundle_dir(self) -> Path | None:
        return self.run.bundle_dir

    @property
    def bundle_id(self) -> str | None:
        return self.run.bundle_id

    @property
    def inbox_key(self) -> int | None:
        return self.run.inbox_key

    def to_json(self) -> dict[str, Any]:
        """The command's JSON document (``codebox/agent-task/v1``): the reference's response envelope
        (``session``, ``completion_outcome``, ``agent_result``) plus where the bundle is."""

        def dump(model: Any) -> Any:
            return model.model_dump(mode="json", by_alias=True, exclude_none=True) if model is not None else None

        doc = {
            "schema": "codebox/agent-task/v1",
            "success": self.exit_code == 0,
            "session": dump(self.session),
            "completion_outcome": dump(self.completion_outcome),
            "agent_result": dump(self.agent_result),
            "artifacts": {
                "directory": str(self.bundle_dir) if self.bundle_dir else None,
                "id": self.bundle_id,
                "inboxKey": self.inbox_key,
            },
            "runtimeId": self.run.runtime_id,
            "exitCode": self.exit_code,
            "warnings": self.warnings,
        }
        return self.run.redact.value(doc)  # type: ignore[no-any-return]


def default_registry() -> HostToolRegistry:
    """The six workspace tools and the parent-only entries (kept in the tool policy for diagnostics)."""
    return HostToolRegistry([*workspace_tools(), *parent_only_tools()])


def build_bridge(request: AgentTaskRequest, registry: HostToolRegistry) -> ToolBridge:
    """The tool bridge: the task's own ``tool_bridge`` when it brings one (only tools registered here can be
    exposed), else one built from ``request.tools`` (default: every workspace tool)."""
    if request.task.tool_bridge is not None:
        return registry.bridge(request.task.tool_bridge.sandbox_tool_policy)
    wanted = request.tools if request.tools is not None else [t.name for t in workspace_tools()]
    return registry.bridge(registry.tool_policy(wanted))


def runtime_policy(request: AgentTaskRequest, bridge: ToolBridge) -> RuntimePolicy:
    """The caller's runtime policy (or the default), its ``commands`` extended with the exposed tools and,
    for a PHP agent, ``wordpress.run-php``: a tool call is dispatched only when its name is listed."""
    base = request.policy or RuntimePolicy(commands=[PHP_COMMAND])
    commands = list(base.commands)
    if request.agent.kind == "php" and PHP_COMMAND not in commands:
        commands.append(PHP_COMMAND)
    if request.policy is None:
        commands += bridge.allowed_tools
    return base.model_copy(update={"commands": list(dict.fromkeys(commands))})


def _mounts(request: AgentTaskRequest) -> list[MountSpec]:
    specs = [
        MountSpec(source=str(ws.source), target=ws.target, mode="readwrite", metadata={"kind": "agent-workspace"})
        for ws in request.workspaces
    ]
    try:
        return validate_mounts(specs)
    except BadInputError as error:
        raise BadInputError(
            error.message, code=error.code, field=(error.field or "").replace("mounts", "workspaces")
        ) from None


def check_agent_request(request: AgentTaskRequest, policy: RuntimePolicy) -> None:
    check_agent(request.agent)
    secret_names = set(policy.secret_names)
    leaked = sorted(secret_names & set(request.agent_env))
    if leaked:
        raise BadInputError(
            f"agent_env: {', '.join(leaked)} is a secret of the runtime policy; the agent never "
            "receives the sandbox's secrets",
            code="invalid-agent-env",
            field="agent_env",
        )


def run_agent_task(
    request: AgentTaskRequest,
    *,
    progress: ProgressListener | None = None,
    control: RunControl | None = None,
    service: RunService | None = None,
    registry: HostToolRegistry | None = None,
) -> AgentTaskOutcome:
    """Run one agent task and return its outcome; bad input is raised before anything boots, everything
    after boot (a crashing agent, a refused tool, a sandbox failure) is in the outcome. ``registry`` adds a
    caller's own host tools (default: :func:`default_registry`)."""
    registry = registry or default_registry()
    bridge = build_bridge(request, registry)
    policy = runtime_policy(request, bridge)
    check_agent_request(request, policy)
    mounts = _mounts(request)
    metadata: dict[str, Any] = {"task": request.task.goal[:500], "agent": request.agent.label()}
    if request.sandbox_session_id is not None:
        metadata["sandbox_session_id"] = request.sandbox_session_id
    if request.session_id is not None:
        metadata["agent_session_id"] = request.session_id
    if request.orchestrator is not None:
        metadata["orchestrator"] = request.orchestrator.model_dump(mode="json", exclude_none=True)
    # a PHP agent's task file: written by the host into a folder of its own before boot, mounted read-only
    agent_folder = Path(tempfile.mkdtemp(prefix="codebox-php-agent-")) if request.agent.kind == "php" else None
    run_request = RunRequest(
        mounts=mounts,
        policy=policy,
        wp=request.wp,
        php=request.php,
        backend=request.backend,
        env=dict(request.env),
        metadata=metadata,
        boot_timeout_s=request.boot_timeout_s,
        artifacts_root=request.artifacts_root,
        tool_commands=[],
        flow=request.flow,
        extra_mounts=[agent_mount(agent_folder)] if agent_folder is not None else [],
    )
    service = service or RunService()
    task_run = _TaskRun(request, bridge, registry, agent_folder)
    try:
        with service.open(run_request, progress=progress, control=control) as run:
            task_run.execute(run)
    finally:
        if agent_folder is not None:
            shutil.rmtree(agent_folder, ignore_errors=True)
    assert run.outcome is not None
    return task_run.outcome(run.outcome)


def agent_mount(folder: Path) -> MountSpec:
    """The read-only mount of a PHP agent's folder at ``/codebox-agent``: the agent reads its task there and
    can change nothing in it. On native the mount target joins PHP's ``open_basedir`` like any mount outside
    the site (runtime/native_site.py), read-only by its bind; it is not captured (Codebox wrote it)."""
    folder.chmod(0o755)
    return MountSpec(
        source=str(folder),
        target=AGENT_DIR,
        mode="readonly",
        captureArtifacts=False,
        metadata={"toolchain": "php-agent"},
    )


class _TaskRun:
    def __init__(
        self,
        request: AgentTaskRequest,
        bridge: ToolBridge,
        registry: HostToolRegistry,
        agent_folder: Path | None = None,
    ) -> None:
        self.request = request
        self.agent_folder = agent_folder  # a PHP agent's, mounted read-only at AGENT_DIR
        self.bridge = bridge
        self.registry = registry
        self.agent_status = "unknown"
        self.agent_summary: str | None = None
        self.failures: list[AgentFailure] = []
        self.blockers: list[Blocker] = []
        self.executions: list[TranscriptExecution] = []
        self.dispatcher: ToolDispatcher | None = None
        self.session: SandboxSession | None = None
        self.completion: CompletionOutcome | None = None
        self.result: AgentResult | None = None
        self.warnings: list[str] = []

    # -- the run ---------------------------------------------------------------------------------------
    def execute(self, run: OpenRun) -> None:
        session = run.session
        ctx = WorkspaceContext(
            session, [w.target for w in self.request.workspaces], timeout_s=self.request.tool_timeout_s
        )
        # a workspace tool's own exec limit is tool_timeout_s; the dispatcher's backstop leaves it room to answer
        self.dispatcher = ToolDispatcher(
            self.registry,
            self.bridge,
            session.spec.policy,
            ctx,
            session.redact,
            timeout_s=self.request.tool_timeout_s + 30,
            on_call=self._on_call(run),
        )
        self._write_json(run, layout.TASK_INPUT, "agent-task-input", self.request.task)
        self._write_json(run, layout.TOOL_BRIDGE, "tool-bridge", self.bridge)
        if self.agent_folder is not None:  # before boot: the read-only mount is staged from it then
            (self.agent_folder / AGENT_TASK_FILE).write_text(
                json.dumps(self._task_message(run), indent=2), encoding="utf-8"
            )
        try:
            run.boot()
            if run.cancelled:
                raise CodeboxError("the task was cancelled", code="cancelled")
            session.emit("agent.started", {"agent": self.request.agent.label(), "tools": self.bridge.allowed_tools})
            if self.request.agent.kind == "php":
                self._run_php(run)
            else:
                self._run_command(run, ctx)
        except CodeboxError as error:
            run.error = error
            self.agent_status = "failed"
            message = session.redact(error.message)
            self.failures.append(AgentFailure(executionIndex=len(self.executions), command="sandbox", message=message))
            self.blockers.append(Blocker(kind="runtime-blocker", message=message, retryable=True))
        session.emit(
            "agent.finished",
            {"status": self.agent_status, "toolCalls": len(self.dispatcher.calls)},
            level="info" if self.agent_status == "completed" else "warning",
        )
        transcript = AgentTranscript(executions=self.executions, toolCalls=self.dispatcher.calls)
        self._write_json(run, layout.TRANSCRIPT, "agent-transcript", transcript)
        summary = run.capture(verify=True)
        if summary is not None:
            self._write_outcome(run, summary)
        run.status = "completed" if self.agent_status == "completed" and run.error is None else "failed"
        if run.verification_problem is not None:
            run.status = "failed"

    @staticmethod
    def _on_call(run: OpenRun) -> Callable[[TranscriptToolCall], None]:
        """Each tool call is an ``agent.tool-call`` event of the run and a progress line."""

        def report(call: TranscriptToolCall) -> None:
            data = {
                "index": call.index,
                "tool": call.tool,
                "status": call.status,
                "durationMs": call.durationMs,
                **({"error": call.error.code} if call.error else {}),
            }
            run.session.emit("agent.tool-call", data, level="info" if call.status == "ok" else "warning")
            if run.progress is not None:
                run.progress.phase("tool", f"{call.tool}: {call.error.code if call.error else 'ok'}")

        return report

    def _task_message(self, run: OpenRun) -> dict[str, Any]:
        return {
            "schema": "codebox/agent-message/v1",
            "type": "task",
            "task": self.request.task.model_dump(mode="json", by_alias=True, exclude_none=True),
            "tool_bridge": self.bridge.model_dump(mode="json", by_alias=True, exclude_none=True),
            "workspace": {"root": "/workspace", "mounts": [w.target for w in self.request.workspaces]},
            "session": {
                "sandbox_session_id": self.request.sandbox_session_id,
                "agent_session_id": self.request.session_id,
                "runtime_id": run.session.runtime_id,
            },
        }

    def _run_command(self, run: OpenRun, ctx: WorkspaceContext) -> None:
        assert self.dispatcher is not None
        redact = run.session.redact
        done: HostAgentRun = run_host_agent(
            self.request.agent.argv,
            self._task_message(run),
            self.dispatcher,
            timeout_s=self.request.timeout_s,
            env_names=self.request.agent_env,
            redact=redact,
            cancelled=lambda: run.cancelled,
        )
        final = done.final
        parsed = redact.value(final.model_dump(mode="json", by_alias=True, exclude_none=True)) if final else None
        label = self.request.agent.label()
        self.executions.append(
            TranscriptExecution(
                executionIndex=0,
                command=label,
                exitCode=done.exit_code,
                stdout=done.stdout,
                stderr=done.stderr,
                parsed=parsed,
            )
        )
        self.agent_summary = redact(final.summary) if final and final.summary else None
        problems = list(done.problems)
        exited_badly = done.exit_code not in (0, None) and not (done.killed and final is not None)
        if done.stopped == "cancelled":
            problems.append("the task was cancelled")
        if exited_badly:
            problems.append(
                f"the agent exited with {done.exit_code}"
                if done.exit_code is not None and done.exit_code > 0
                else f"the agent was killed by signal {-(done.exit_code or 0)}"
            )
        if final is None and done.stopped is None and not exited_badly:
            problems.append("the agent ended without a final message")
        if final is not None and final.status == "failed":
            problems.append(f"the agent reported failure: {self.agent_summary or 'no summary'}")
        failed = done.stopped is not None or exited_badly or (final is not None and final.status == "failed")
        if failed:
            self.agent_status = "failed"
        elif final is not None:
            self.agent_status = "completed"
        else:
            self.agent_status = "unknown"
        if problems and (failed or final is None):
            self.failures.append(
                AgentFailure(
                    executionIndex=0, command=label, exitCode=done.exit_code, message=redact("; ".join(problems))[:4000]
                )
            )
        if done.stopped == "timeout":
            self.blockers.append(
                Blocker(
                    kind="runtime-failure",
                    message=f"the agent timed out after {self.request.timeout_s:g} s",
                    retryable=True,
                )
            )

    def _run_php(self, run: OpenRun) -> None:
        """A PHP agent finds the task message (with the tool bridge) in /codebox-agent/task.json, works on
        /workspace with PHP and prints its final message as the last JSON line of its output."""
        assert self.request.agent.php_file is not None
        execution = run.execute(
            CommandStep(PHP_COMMAND, [f"code-file={self.request.agent.php_file}"], self.request.timeout_s)
        )
        redact = run.session.redact
        final = _last_final(execution.stdout)
        parsed = redact.value(final.model_dump(mode="json", by_alias=True, exclude_none=True)) if final else None
        label = self.request.agent.label()
        self.executions.append(
            TranscriptExecution(
                executionIndex=0,
                command=label,
                exitCode=execution.exitCode,
                stdout=redact(execution.stdout[-65536:]),
                stderr=redact(execution.stderr[-65536:]),
                parsed=parsed,
            )
        )
        self.agent_summary = redact(final.summary) if final and final.summary else None
        if execution.exitCode != 0 or (final is not None and final.status == "failed"):
            self.agent_status = "failed"
            self.failures.append(
                AgentFailure(
                    executionIndex=0,
                    command=label,
                    exitCode=execution.exitCode,
                    message=f"the PHP agent exited with {execution.exitCode}"
                    if execution.exitCode
                    else "the PHP agent reported failure",
                )
            )
        else:
            self.agent_status = "completed" if final is not None else "unknown"

    # -- documents -------------------------------------------------------------------------------------
    def _write_json(self, run: OpenRun, rel: str, kind: str, model: Any) -> Path:
        doc = model.model_dump(mode="json", by_alias=True, exclude_none=True) if hasattr(model, "model_dump") else model
        path = run.session.add_evidence(rel, kind, "application/json")
        path.write_text(json.dumps(run.session.redact.value(doc), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return path

    def _write_outcome(self, run: OpenRun, summary: Any) -> None:
        assert self.dispatcher is not None
        bundle = Path(summary.path)
        patch = bundle / layout.PATCH
        patch_bytes = patch.read_bytes() if patch.is_file() else b""
        diagnostics = [
            {"tool": c.tool, "code": c.error.code, "message": c.error.message}
            for c in self.dispatcher.calls
            if c.error is not None
        ]
        facts = TaskFacts(
            agent_status=self.agent_status,
            agent_summary=self.agent_summary,
            commands=[(e.command, e.exitCode) for e in self.executions],
            failures=self.failures,
            changed_files=list(summary.changed_files or []),
            patch_bytes=len(patch_bytes),
            patch_sha256=hashlib.sha256(patch_bytes).hexdigest() if patch_bytes else None,
            bundle_dir=str(bundle),
            bundle_id=None,
            runtime={"id": run.session.runtime_id, "wp": run.request.wp, "php": run.request.php},
            task={"goal": self.request.task.goal[:500], "agent": self.request.agent.label()},
            tool_diagnostics=diagnostics,
            blockers=self.blockers,
            bundle_valid=run.verification_problem is None,
        )
        for _ in range(2):  # the id commits to the file list only, so the second seal keeps it (docs/contracts.md)
            self.result = agent_result(facts)
            self.completion = completion_outcome(facts, self.result)
            self.session = self._envelope(run, summary)
            added = [
                self._write_json(run, layout.AGENT_RESULT, "agent-result", self.result),
                self._write_json(run, layout.COMPLETION_OUTCOME, "completion-outcome", self.completion),
                self._write_json(run, layout.SANDBOX_SESSION, "sandbox-session", self.session),
            ]
            assert added
            summary = append_and_reseal(bundle, run.session.evidence[-3:])
            run.summary = summary
            if facts.bundle_id == summary.id:
                break
            facts.bundle_id = summary.id

    def _envelope(self, run: OpenRun, summary: Any) -> SandboxSession:
        status = "cancelled" if run.cancelled else ("completed" if self.agent_status == "completed" else "failed")
        return SandboxSession(
            id=self.request.sandbox_session_id,
            status=status,
            agent_session_id=self.request.session_id,
            orchestrator=self.request.orchestrator,
            runtime_id=run.session.runtime_id,
            artifacts=SessionArtifacts(
                path=str(summary.path) if summary is not None else None,
                bundle_id=getattr(summary, "id", None),
                completion_outcome=layout.COMPLETION_OUTCOME,
            ),
        )

    def outcome(self, run: RunOutcome) -> AgentTaskOutcome:
        session = self.session or SandboxSession(
            id=self.request.sandbox_session_id,
            status="cancelled" if run.status == "cancelled" else "failed",
            agent_session_id=self.request.session_id,
            orchestrator=self.request.orchestrator,
            runtime_id=run.runtime_id,
            artifacts=SessionArtifacts(path=str(run.bundle_dir) if run.bundle_dir else None, bundle_id=run.bundle_id),
        )
        if run.status == "cancelled":
            code = int(ExitCode.INTERRUPTED)
        elif run.error is not None and self.agent_status != "completed":
            code = int(run.error.exit_code)
        elif self.agent_status == "completed" and run.status == "completed":
            code = int(ExitCode.OK)
        else:
            code = int(ExitCode.FAILED)
        return AgentTaskOutcome(
            session=session,
            completion_outcome=self.completion,
            agent_result=self.result,
            run=run,
            exit_code=code,
            warnings=[*self.warnings, *run.warnings],
        )


def _last_final(stdout: str) -> AgentMessage | None:
    for line in reversed(stdout.strip().splitlines()[-50:]):
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and data.get("type") == "final":
            data.setdefault("schema", "codebox/agent-message/v1")
            try:
                return AgentMessage.model_validate(data)
            except ValueError:
                return None
    return None


__all__ = ["AgentTaskOutcome", "TaskInput", "build_bridge", "default_registry", "run_agent_task", "runtime_policy"]
