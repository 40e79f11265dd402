"""The host tool registry and the dispatcher of one task's tool calls (docs/agent-tasks.md, "Host tools").

A :class:`HostTool` declares its name, JSON input and output schemas (Draft 2020-12, checked with
``jsonschema``), policy metadata and a host-side handler. :class:`ToolDispatcher` is the only way a call
reaches a handler: the tool must be registered, exposed by the task's tool bridge and listed in the
runtime policy's ``commands``; the input is validated before the handler runs and the output after it.
Every call returns a ``wp-codebox/host-tool-result/v1`` document and is recorded in the transcript; a
violation is a structured error, never a traceback.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import jsonschema

from codebox_tui.bundle.redact import Redactor
from codebox_tui.contracts.agent import (
    HostToolDeclaration,
    HostToolDiagnostics,
    HostToolPolicy,
    HostToolPolicyMeta,
    HostToolResult,
    SandboxToolEntry,
    SandboxToolPolicy,
    ToolBridge,
    ToolError,
    ToolResultPayload,
    ToolRuntime,
    TranscriptToolCall,
)
from codebox_tui.contracts.common import utc_now_iso
from codebox_tui.contracts.runtime import RuntimePolicy
from codebox_tui.errors import BadInputError

MAX_INPUT_BYTES = 4 * 1024 * 1024


class ToolFailure(Exception):
    """Raised by a handler for an expected failure (a missing file, a patch that does not apply): the
    caller gets ``host-tool-handler-error`` with this message, or ``code`` when given."""

    def __init__(
        self, message: str, code: str = "host-tool-handler-error", details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.details = details


ToolHandler = Callable[[dict[str, Any], Any], Any]


@dataclass
class HostTool:
    """One declared tool. ``execution_location`` / ``visibility`` / ``scope`` are its sandbox tool policy
    entry's exposure fields; parent-only tools (push, deploy, apply-back) are declared with ``parent``."""

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    risk: Literal["read", "write", "external"]
    handler: ToolHandler | None
    capability: str | None = None
    execution_location: Literal["sandbox", "parent", "external"] = "sandbox"
    visibility: Literal["sandbox", "parent", "both", "hidden"] = "sandbox"
    scope: Literal["runtime_local", "control_plane"] = "runtime_local"

    def __post_init__(self) -> None:
        for label, schema in (("inputSchema", self.input_schema), ("outputSchema", self.output_schema)):
            try:
                jsonschema.Draft202012Validator.check_schema(schema)
            except jsonschema.SchemaError as error:
                raise BadInputError(
                    f"tool {self.name}: its {label} is not a valid JSON Schema: {error.message}",
                    code="host-tool-invalid-schema",
                    field=f"tools.{self.name}.{label}",
                ) from None

    def declaration(self) -> HostToolDeclaration:
        return HostToolDeclaration(
            name=self.name,
            description=self.description,
            inputSchema=self.input_schema,
            outputSchema=self.output_schema,
            policy=HostToolPolicyMeta(capability=self.capability, risk=self.risk),
        )

    def policy_entry(self, allowed: bool) -> SandboxToolEntry:
        return SandboxToolEntry(
            id=self.name,
            runtime_tool_id=self.name,
            execution_location=self.execution_location,
            transport_visibility=self.visibility,
            allowed=allowed,
            runtime=ToolRuntime(
                environment="sandbox" if self.execution_location == "sandbox" else "host", capability_scope=self.scope
            ),
            risk=self.risk,
            action=self.capability,
        )


class HostToolRegistry:
    """Tools by name (names are unique)."""

    def __init__(self, tools: Iterable[HostTool] = ()) -> None:
        self._tools: dict[str, HostTool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: HostTool) -> None:
        if tool.name in self._tools:
            raise BadInputError(
                f"tool {tool.name!r} is registered twice", code="host-tool-duplicate", field=f"tools.{tool.name}"
            )
        self._tools[tool.name] = tool

    def get(self, name: str) -> HostTool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def tool_policy(self, allowed: Iterable[str]) -> SandboxToolPolicy:
        """The ``wp-codebox/sandbox-tool-policy/v1`` snapshot: every registered tool, allowed when named in
        ``allowed`` (parent-side tools are never allowed in a sandbox task)."""
        wanted = set(allowed)
        unknown = sorted(wanted - set(self._tools))
        if unknown:
            raise BadInputError(
                f"--tools: unknown tool(s) {', '.join(unknown)}; expected some of "
                f"{', '.join(n for n, t in self._tools.items() if t.execution_location == 'sandbox')}",
                code="unknown-tool",
                field="tools",
            )
        entries = [
            tool.policy_entry(name in wanted and tool.execution_location == "sandbox")
            for name, tool in self._tools.items()
        ]
        return SandboxToolPolicy(tools=entries, metadata={"source": "codebox"})

    def bridge(self, policy: SandboxToolPolicy) -> ToolBridge:
        """The ``wp-codebox/tool-bridge/v1`` document for ``policy``: only exposed tools are in
        ``allowed_tools`` and ``host_policy``; the others stay in the policy snapshot, and the reason each
        is not exposed is in ``metadata.notExposed`` (docs/agent-tasks.md, "Tool bridge")."""
        exposed: list[str] = []
        hidden: list[dict[str, str]] = []
        for entry in policy.tools:
            reason = entry.exposure()
            if reason is None and entry.id in self._tools:
                exposed.append(entry.id)
            else:
                hidden.append({"id": entry.id, "reason": reason or "not-registered"})
        return ToolBridge(
            allowed_tools=exposed,
            sandbox_tool_policy=policy,
            host_policy=HostToolPolicy(tools=[self._tools[name].declaration() for name in exposed]),
            authorization={
                "mode": "allowlist",
                "notes": [
                    "A call is dispatched only for a tool in allowed_tools that the runtime policy's commands list.",
                    "Push, deploy, merge, pull requests and apply-back are parent-only.",
                ],
            },
            redaction={
                "notes": [
                    "Secret values reach the sandbox only through the runtime policy's environment allow-list; "
                    "they are redacted from tool inputs, outputs, transcripts, logs and events."
                ]
            },
            metadata={"notExposed": hidden},
        )


@dataclass
class ToolDispatcher:
    """Dispatches one task's tool calls (``context`` is passed to every handler) and keeps the record."""

    registry: HostToolRegistry
    bridge: ToolBridge
    policy: RuntimePolicy
    context: Any
    redact: Redactor
    calls: list[TranscriptToolCall] = field(default_factory=list)
    max_calls: int = 500
    timeout_s: float = 60.0  # per call; a handler still running then is abandoned (host-tool-timeout)
    on_call: Callable[[TranscriptToolCall], None] | None = None  # told about each call once recorded

    def call(self, name: str, tool_input: Any, call_id: str | None = None) -> HostToolResult:
        started_at, started = utc_now_iso(), time.monotonic()
        tool = self.registry.get(name)
        try:
            output = self._dispatch(name, tool, tool_input)
        except ToolFailure as failure:
            result = self._error(name, tool, failure.code, failure.message, failure.details, started_at)
        else:
            result = self._ok(name, tool, output, started_at)
        self.calls.append(
            TranscriptToolCall(
                index=len(self.calls),
                id=self.redact(call_id) if call_id else None,
                tool=self.redact(name)[:200],
                input=self.redact.value(tool_input),
                status=result.status,
                error=result.error,
                durationMs=int((time.monotonic() - started) * 1000),
            )
        )
        if self.on_call is not None:
            self.on_call(self.calls[-1])
        return result

    def _dispatch(self, name: str, tool: HostTool | None, tool_input: Any) -> Any:
        if len(self.calls) >= self.max_calls:
            raise ToolFailure(f"the task made more than {self.max_calls} tool calls", "host-tool-denied")
        if tool is None:
            raise ToolFailure(
                f"unknown tool {name!r}; the tool bridge exposes: {', '.join(self.bridge.allowed_tools)}",
                "host-tool-unknown",
            )
        if name not in self.bridge.allowed_tools or name not in self.policy.commands or tool.handler is None:
            raise ToolFailure(
                f"Tool is not allowed by runtime policy: {name}",
                "host-tool-denied",
                {"allowedTools": list(self.bridge.allowed_tools)},
            )
        problem = _first_error(tool.input_schema, tool_input)
        if problem is not None:
            raise ToolFailure(f"{name}: invalid input: {problem}", "host-tool-invalid-input")
        output = self._run_handler(name, tool, tool_input)
        problem = _first_error(tool.output_schema, output)
        if problem is not None:
            raise ToolFailure(f"{name}: invalid output: {problem}", "host-tool-invalid-output")
        return output

    def _run_handler(self, name: str, tool: HostTool, tool_input: Any) -> Any:
        """The handler in a thread of its own, so a hung handler cannot outlast ``timeout_s``."""
        box: dict[str, Any] = {}

        def work() -> None:
            try:
                assert tool.handler is not None
                box["output"] = tool.handler(tool_input, self.context)
            except BaseException as error:  # handed to the caller's thread below
                box["error"] = error

        worker = threading.Thread(target=work, name=f"codebox-tool-{name}", daemon=True)
        worker.start()
        worker.join(self.timeout_s)
        if worker.is_alive():
            raise ToolFailure(f"{name} did not answer within {self.timeout_s:g} s", "host-tool-timeout")
        error = box.get("error")
        if isinstance(error, ToolFailure):
            raise error
        if error is not None:  # a handler bug is the tool's failure, reported, never a traceback
            raise ToolFailure(f"{name} failed: {type(error).__name__}: {error}") from error
        return box.get("output")

    def _diagnostics(self, name: str, tool: HostTool | None) -> HostToolDiagnostics:
        return HostToolDiagnostics(
            policyCommand=name,
            inputSchema=tool.input_schema if tool else None,
            outputSchema=tool.output_schema if tool else None,
            policy=tool.declaration().policy.model_dump(exclude_none=True) if tool else None,
        )

    def _ok(self, name: str, tool: HostTool | None, output: Any, started_at: str) -> HostToolResult:
        safe = self.redact.value(output)
        return HostToolResult(
            tool=name,
            status="ok",
            output=safe,
            toolResult=ToolResultPayload(success=True, tool_name=name, result=safe),
            diagnostics=self._diagnostics(name, tool),
            startedAt=started_at,
            finishedAt=utc_now_iso(),
        )

    def _error(
        self, name: str, tool: HostTool | None, code: str, message: str, details: dict[str, Any] | None, started_at: str
    ) -> HostToolResult:
        error = ToolError(
            code=code, message=self.redact(message)[:4000], details=self.redact.value(details) if details else None
        )
        shown = self.redact(name)[:200]
        return HostToolResult(
            tool=shown,
            status="error",
            error=error,
            toolResult=ToolResultPayload(success=False, tool_name=shown, error=error),
            diagnostics=self._diagnostics(shown, tool),
            startedAt=started_at,
            finishedAt=utc_now_iso(),
        )


def _first_error(schema: dict[str, Any], value: Any) -> str | None:
    """The first JSON Schema violation of ``value`` (path and message), or None."""
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(value))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{'at ' + where + ': ' if where else ''}{error.message}"[:1000]
