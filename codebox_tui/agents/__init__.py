"""Agent tasks: one task, its agent and its tools in one disposable sandbox (docs/agent-tasks.md).

The entry point for every caller (``codebox agent-task``, batches, the MCP server) is
:func:`run_agent_task` with an :class:`AgentTaskRequest` (from the CLI's text or
:func:`agent_task_request_from_json` for JSON / JSONL items); it runs on the one run lifecycle.
"""

from codebox_tui.agents.registry import HostTool, HostToolRegistry, ToolDispatcher, ToolFailure
from codebox_tui.agents.request import (
    AgentSpec,
    AgentTaskRequest,
    WorkspaceMount,
    agent_from_text,
    agent_task_request_from_json,
    task_from_text,
    task_from_value,
    workspace_from_text,
)
from codebox_tui.agents.run import AgentTaskOutcome, build_bridge, default_registry, run_agent_task, runtime_policy

__all__ = [
    "AgentSpec",
    "AgentTaskOutcome",
    "AgentTaskRequest",
    "HostTool",
    "HostToolRegistry",
    "ToolDispatcher",
    "ToolFailure",
    "WorkspaceMount",
    "agent_from_text",
    "agent_task_request_from_json",
    "build_bridge",
    "default_registry",
    "run_agent_task",
    "runtime_policy",
    "task_from_text",
    "task_from_value",
    "workspace_from_text",
]
