"""Agent task contracts (docs/agent-tasks.md): the task input, the session envelope, the completion outcome,
the agent result, the transcript, host tool results, the sandbox tool policy and the tool bridge, and the
messages of the host-command agent protocol. These models are the one definition of each schema; the JSON
Schemas under ``contracts/schemas/`` are generated from them."""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field, model_validator

from codebox_tui.contracts.common import Contract, OpenContract

TASK_INPUT_SCHEMA: Final = "wp-codebox/task-input/v1"
SANDBOX_SESSION_SCHEMA: Final = "wp-codebox/sandbox-session/v1"
COMPLETION_OUTCOME_SCHEMA: Final = "wp-codebox/sandbox-completion-outcome/v1"
AGENT_RESULT_SCHEMA: Final = "wp-codebox/agent-result/v1"
TRANSCRIPT_SCHEMA: Final = "wp-codebox/agent-transcript/v1"
HOST_TOOL_RESULT_SCHEMA: Final = "wp-codebox/host-tool-result/v1"
HOST_TOOL_POLICY_SCHEMA: Final = "wp-codebox/host-tool-policy/v1"
SANDBOX_TOOL_POLICY_SCHEMA: Final = "wp-codebox/sandbox-tool-policy/v1"
TOOL_BRIDGE_SCHEMA: Final = "wp-codebox/tool-bridge/v1"
AGENT_MESSAGE_SCHEMA: Final = "codebox/agent-message/v1"
HOST_TOOL_TRANSPORT: Final = "wp-codebox-host-tool"

# the error codes of a host tool call (docs/agent-tasks.md, "Host tools")
ToolErrorCode = Literal[
    "host-tool-unknown",
    "host-tool-denied",
    "host-tool-invalid-input",
    "host-tool-invalid-output",
    "host-tool-handler-error",
    "host-tool-timeout",
]


# -- tool policy and bridge ----------------------------------------------------------------------------------


class ToolRuntime(Contract):
    environment: str = "sandbox"
    capability_scope: Literal["runtime_local", "control_plane"] = "runtime_local"


class SandboxToolEntry(Contract):
    """One tool of the sandbox tool policy; exposed only when :meth:`exposure` is None."""

    id: str = Field(min_length=1)
    runtime_tool_id: str = Field(min_length=1)
    aliases: list[str] | None = None
    execution_location: Literal["sandbox", "parent", "external"]
    transport_visibility: Literal["sandbox", "parent", "both", "hidden"]
    allowed: bool
    runtime: ToolRuntime | None = None
    risk: Literal["read", "write", "external"] | None = None
    action: str | None = None
    metadata: dict[str, Any] | None = None

    def exposure(self) -> str | None:
        """Why the tool is not exposed to the sandbox (None: it is). The rule of docs/agent-tasks.md:
        allowed, runtime-local in both fields, not hidden, visible to the sandbox."""
        if not self.allowed:
            return "denied"
        if self.transport_visibility == "hidden":
            return "hidden"
        if self.transport_visibility not in ("sandbox", "both"):
            return "parent-only"
        scope = self.runtime.capability_scope if self.runtime is not None else "runtime_local"
        if self.execution_location != "sandbox" or scope != "runtime_local":
            return "parent-only"
        return None


class SandboxToolPolicy(Contract):
    schema_: Literal["wp-codebox/sandbox-tool-policy/v1"] = Field(default=SANDBOX_TOOL_POLICY_SCHEMA, alias="schema")
    version: Literal[1] = 1
    tools: list[SandboxToolEntry]
    metadata: dict[str, Any] = Field(default_factory=dict)


class HostToolPolicyMeta(Contract):
    capability: str | None = None
    permissions: list[str] | None = None
    risk: Literal["read", "write", "external"]
    description: str | None = None


class HostToolDeclaration(Contract):
    name: str
    description: str
    inputSchema: dict[str, Any]
    outputSchema: dict[str, Any]
    policy: HostToolPolicyMeta


class HostToolPolicy(Contract):
    """The host policy projection of a tool bridge: the declarations of the exposed tools."""

    schema_: Literal["wp-codebox/host-tool-policy/v1"] = Field(default=HOST_TOOL_POLICY_SCHEMA, alias="schema")
    version: Literal[1] | None = None  # the design's example carries it; Codebox leaves it out
    tools: list[HostToolDeclaration]


class BridgeDispatcher(Contract):
    owner: Literal["wp-codebox"] = "wp-codebox"
    callback: str = "wp_codebox_browser_runtime_tool_callback"
    location: Literal["sandbox"] = "sandbox"


# Notes are a list where Codebox writes them; the design's example documents write one string (readers accept both).
Notes = list[str] | str


class BridgeAuthorization(Contract):
    mode: Literal["allowlist"] = "allowlist"
    notes: Notes = Field(default_factory=list)


class BridgeRedaction(Contract):
    notes: Notes = Field(default_factory=list)


class ToolBridge(Contract):
    schema_: Literal["wp-codebox/tool-bridge/v1"] = Field(default=TOOL_BRIDGE_SCHEMA, alias="schema")
    version: Literal[1] = 1
    allowed_tools: list[str]
    sandbox_tool_policy: SandboxToolPolicy
    host_policy: HostToolPolicy | None = None
    dispatcher: BridgeDispatcher = Field(default_factory=BridgeDispatcher)
    authorization: BridgeAuthorization = Field(default_factory=BridgeAuthorization)
    redaction: BridgeRedaction = Field(default_factory=BridgeRedaction)
    metadata: dict[str, Any] | None = None


# -- host tool results ---------------------------------------------------------------------------------------


class ToolError(Contract):
    code: str
    message: str
    details: dict[str, Any] | None = None


class ToolResultPayload(Contract):
    success: bool
    tool_name: str
    result: Any = None
    error: ToolError | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    runtime: dict[str, Any] | None = None


class HostToolDiagnostics(Contract):
    transport: Literal["wp-codebox-host-tool"] = HOST_TOOL_TRANSPORT
    resultSchema: Literal["wp-codebox/host-tool-result/v1"] = HOST_TOOL_RESULT_SCHEMA
    policyCommand: str
    inputSchema: dict[str, Any] | None = None
    outputSchema: dict[str, Any] | None = None
    policy: dict[str, Any] | None = None


class HostToolResult(Contract):
    schema_: Literal["wp-codebox/host-tool-result/v1"] = Field(default=HOST_TOOL_RESULT_SCHEMA, alias="schema")
    tool: str
    status: Literal["ok", "error"]
    output: Any = None
    error: ToolError | None = None
    toolResult: ToolResultPayload
    diagnostics: HostToolDiagnostics
    startedAt: str
    finishedAt: str


# -- task input and correlation ------------------------------------------------------------------------------


class TaskTarget(OpenContract):
    kind: str = "repo"
    path: str | None = None


class TaskInput(Contract):
    """``wp-codebox/task-input/v1``; ``allowed_tools`` and ``expected_artifacts`` are advisory (the runtime
    policy and the tool bridge decide)."""

    schema_: Literal["wp-codebox/task-input/v1"] = Field(default=TASK_INPUT_SCHEMA, alias="schema")
    goal: str = Field(min_length=1, max_length=100_000)
    target: TaskTarget | None = None
    allowed_tools: list[str] = Field(default_factory=list)
    expected_artifacts: list[str] = Field(default_factory=list)
    policy: dict[str, Any] = Field(default_factory=lambda: {"applyBack": "reviewed"})
    context: dict[str, Any] = Field(default_factory=dict)
    tool_bridge: ToolBridge | None = None


class Orchestrator(OpenContract):
    """Opaque correlation metadata of the caller's control plane (echoed, recorded with the run)."""

    type: str | None = None
    id: str | None = None
    job_id: str | None = None


# -- outcome files -------------------------------------------------------------------------------------------


class ChangedFilesRef(Contract):
    count: int
    paths: list[str]
    statuses: dict[str, int] | None = None  # Codebox always writes it; the design's examples leave it out
    artifact: str = "files/changed-files.json"


class PatchRef(Contract):
    bytes: int
    sha256: str | None = None
    artifact: str = "files/patch.diff"


class TranscriptRef(Contract):
    artifact: str = "files/transcript.json"
    executionCount: int


class ArtifactRefs(Contract):
    directory: str
    review: str = "files/review.json"
    manifest: str = "manifest.json"


class AgentFailure(Contract):
    executionIndex: int
    command: str
    exitCode: int | None = None
    message: str


class WorkspaceTools(Contract):
    diagnostics: list[dict[str, Any]] = Field(default_factory=list)


class AgentResult(Contract):
    schema_: Literal["wp-codebox/agent-result/v1"] = Field(default=AGENT_RESULT_SCHEMA, alias="schema")
    status: Literal["completed", "failed", "unknown"]
    actionable: bool
    summary: str
    changedFiles: ChangedFilesRef
    patch: PatchRef
    transcript: TranscriptRef
    artifacts: ArtifactRefs | None = None  # Codebox always writes it; the design's example leaves it out
    failures: list[AgentFailure] = Field(default_factory=list)
    noOpReason: Literal["execution_failed", "no_file_changes"] | None = None
    workspaceTools: WorkspaceTools | None = None
    agentSummary: str | None = None  # what the agent itself said in its final message (redacted)


class VerificationCommand(Contract):
    command: str
    exitCode: int | None = None


class BundleCheck(Contract):
    artifact: str
    status: str
    strict: bool = True


class Verification(Contract):
    # a path where Codebox writes it; the design's example writes a {artifact, executionCount} reference
    transcript: str | TranscriptRef = "files/transcript.json"
    commands: list[VerificationCommand] = Field(default_factory=list)
    artifactBundle: BundleCheck | None = None


class Blocker(Contract):
    kind: Literal["runtime-blocker", "runtime-failure"]
    message: str
    retryable: bool = True


class Provenance(Contract):
    artifactBundleId: str | None = None
    artifactDirectory: str
    runtime: dict[str, Any] | None = None
    task: dict[str, Any] | None = None


class CompletionOutcome(Contract):
    schema_: Literal["wp-codebox/sandbox-completion-outcome/v1"] = Field(
        default=COMPLETION_OUTCOME_SCHEMA, alias="schema"
    )
    status: Literal["succeeded", "blocked", "failed", "partial"]
    summary: str
    changedFiles: ChangedFilesRef
    patch: PatchRef
    artifacts: ArtifactRefs | None = None  # Codebox always writes it; the design's example leaves it out
    verification: Verification
    blockers: list[Blocker] = Field(default_factory=list)
    riskNotes: list[str] = Field(default_factory=list)
    confidence: Literal["high", "medium", "low"]
    nextAction: Literal["promote", "retry", "review", "fix-blocker"]
    provenance: Provenance


class TranscriptExecution(Contract):
    executionIndex: int
    command: str
    exitCode: int | None = None
    stdout: str = ""
    stderr: str = ""
    parsed: Any = None


class TranscriptToolCall(Contract):
    index: int
    id: str | None = None
    tool: str
    input: Any = None
    status: Literal["ok", "error"]
    error: ToolError | None = None
    durationMs: int = 0


class AgentTranscript(Contract):
    schema_: Literal["wp-codebox/agent-transcript/v1"] = Field(default=TRANSCRIPT_SCHEMA, alias="schema")
    executions: list[TranscriptExecution]
    toolCalls: list[TranscriptToolCall] = Field(default_factory=list)


class SessionArtifacts(Contract):
    path: str | None = None
    bundle_id: str | None = None
    preview_url: str | None = None
    completion_outcome: str = "files/completion-outcome.json"


class SandboxSession(Contract):
    """The response envelope of one task call; ``status`` describes this synchronous call only."""

    schema_: Literal["wp-codebox/sandbox-session/v1"] = Field(default=SANDBOX_SESSION_SCHEMA, alias="schema")
    id: str | None = None
    status: Literal["completed", "failed", "cancelled"]
    persistence: Literal["external-orchestrator"] = "external-orchestrator"
    agent_session_id: str | None = None
    orchestrator: Orchestrator | None = None
    runtime_id: str | None = None
    artifacts: SessionArtifacts


# -- the host-command agent protocol (docs/agent-tasks.md, "The JSON-lines protocol") ------------------------


class AgentMessage(Contract):
    """One line an agent writes on stdout: a tool call, a log line or its final result."""

    schema_: Literal["codebox/agent-message/v1"] = Field(default=AGENT_MESSAGE_SCHEMA, alias="schema")
    type: Literal["tool_call", "log", "final"]
    id: str | None = Field(default=None, max_length=200)
    tool: str | None = Field(default=None, max_length=200)
    input: Any = None
    message: str | None = Field(default=None, max_length=100_000)
    status: Literal["completed", "failed"] | None = None
    summary: str | None = Field(default=None, max_length=100_000)

    @model_validator(mode="after")
    def _shape(self) -> AgentMessage:
        if self.type == "tool_call" and not self.tool:
            raise ValueError("a tool_call needs a tool name")
        if self.type == "final" and self.status is None:
            raise ValueError("a final message needs status completed or failed")
        return self
