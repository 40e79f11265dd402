"""What a caller asks of one agent task (:class:`AgentTaskRequest`) and how JSON / JSONL items and the CLI's
text become one (docs/agent-tasks.md, "The request")."""

from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from codebox_tui.contracts.agent import Orchestrator, TaskInput
from codebox_tui.contracts.runtime import RuntimePolicy
from codebox_tui.durations import parse_duration
from codebox_tui.errors import BadInputError
from codebox_tui.versions import DEFAULT_WP_VERSION

WORKSPACE_ROOT = "/workspace"
FORBIDDEN_TASK_FIELDS = ("code", "code_file", "codeFile")  # the product path takes no raw PHP (docs/agent-tasks.md)


class WorkspaceMount(BaseModel):
    """A host folder mounted read-write (a private copy) at ``target`` under /workspace."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    source: Path
    target: str

    @field_validator("target")
    @classmethod
    def _under_workspace(cls, target: str) -> str:
        if target != WORKSPACE_ROOT and not target.startswith(WORKSPACE_ROOT + "/"):
            raise ValueError(f"must be {WORKSPACE_ROOT} or a path under it, e.g. {WORKSPACE_ROOT}/my-plugin")
        if any(part in (".", "..") for part in target.split("/")):
            raise ValueError("must not contain '.' or '..' segments")
        return target.rstrip("/") or WORKSPACE_ROOT


class AgentSpec(BaseModel):
    """The agent: a host ``command`` (argv) speaking the JSON-lines protocol, or a ``php`` script run inside
    the sandbox with ``wordpress.run-php``."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    kind: Literal["command", "php"]
    argv: list[str] = Field(default_factory=list)
    php_file: Path | None = None

    def label(self) -> str:
        if self.kind == "php":
            return f"php:{self.php_file.name if self.php_file else '?'}"
        return f"agent:{Path(self.argv[0]).name if self.argv else '?'}"


class AgentTaskRequest(BaseModel):
    """One agent task: the ``wp-codebox/task-input/v1`` document, the workspace mounts, the agent, the tools
    it may call, correlation (``sandbox_session_id``, ``session_id``, ``orchestrator``), time limits and the
    runtime policy. ``agent_env`` names the parent environment variables a host-command agent receives
    (its own credentials); the runtime policy's secrets are never among them."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    task: TaskInput
    workspaces: list[WorkspaceMount] = Field(min_length=1)
    agent: AgentSpec
    tools: list[str] | None = None  # None: every built-in workspace tool
    sandbox_session_id: str | None = Field(default=None, max_length=200)
    session_id: str | None = Field(default=None, max_length=200)
    orchestrator: Orchestrator | None = None
    policy: RuntimePolicy | None = None
    timeout_s: float = Field(default=600.0, gt=0)
    tool_timeout_s: float = Field(default=60.0, gt=0)
    boot_timeout_s: float | None = Field(default=None, gt=0)
    env: dict[str, str] = Field(default_factory=dict)
    agent_env: list[str] = Field(default_factory=list)
    wp: str = DEFAULT_WP_VERSION
    php: str | None = None  # None: the backend's default (the host's PHP on native)
    backend: Literal["playground", "native"] | None = None  # None: CODEBOX_BACKEND (docs/backends.md)
    artifacts_root: Path | None = None
    flow: str = "agent-task"


# -- text → fields (the CLI and JSON items share these) --------------------------------------------------------


def task_from_value(value: Any, field: str = "task") -> TaskInput:
    """A plain string is normalised to ``{goal: string}``; an object is a task-input/v1 document. Raw
    ``code`` / ``code_file`` fields are refused."""
    if isinstance(value, str):
        if not value.strip():
            raise BadInputError(f"{field} must not be empty", code="invalid-task", field=field)
        return TaskInput(goal=value)
    if not isinstance(value, dict):
        raise BadInputError(
            f"{field} must be a string or a wp-codebox/task-input/v1 object", code="invalid-task", field=field
        )
    for key in FORBIDDEN_TASK_FIELDS:
        if key in value:
            raise BadInputError(
                f"{field}.{key}: a task takes no raw PHP; describe the goal instead",
                code="invalid-task",
                field=f"{field}.{key}",
            )
    data = dict(value)
    if "task" in data and "goal" not in data:
        data["goal"] = data.pop("task")
    try:
        return TaskInput.model_validate(data)
    except ValidationError as error:
        raise _named(error, field) from None


def task_from_text(text: str) -> TaskInput:
    """``--task FILE|TEXT``: a JSON file (task-input/v1) or a text file becomes the task; other text is the
    goal itself."""
    path = Path(text).expanduser()
    if len(text) < 4096 and "\n" not in text and path.is_file():
        raw = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix == ".json":
            try:
                return task_from_value(json.loads(raw), f"--task {path}")
            except ValueError as error:
                raise BadInputError(
                    f"--task {path} is not valid JSON: {error}", code="invalid-task", field="--task"
                ) from None
        return task_from_value(raw, "--task")
    return task_from_value(text, "--task")


def workspace_from_text(text: str, index: int = 0, base_dir: Path | None = None) -> WorkspaceMount:
    """``DIR[:/workspace/path]``; the default target is ``/workspace/<folder name>``; a relative DIR is
    relative to ``base_dir`` (default: the current folder)."""
    host, sep, target = text.partition(":")
    if not host:
        raise BadInputError(
            f"--workspace {text!r} must look like DIR[:/workspace/path]",
            code="invalid-workspace",
            field=f"workspaces[{index}]",
        )
    source = _based(Path(host).expanduser(), base_dir)
    if not source.is_dir():
        raise BadInputError(
            f"--workspace {host!r} is not a folder", code="missing-mount-source", field=f"workspaces[{index}].source"
        )
    name = source.resolve().name or "workspace"
    try:
        return WorkspaceMount(source=source.resolve(), target=target if sep else f"{WORKSPACE_ROOT}/{name}")
    except ValidationError as error:
        raise _named(error, f"workspaces[{index}]") from None


def agent_from_text(text: str, field: str = "--agent", base_dir: Path | None = None) -> AgentSpec:
    """A path to a ``.php`` file is a sandbox agent; anything else is a host command line (split like a
    shell would, never run by one) whose program must exist."""
    stripped = text.strip()
    if not stripped:
        raise BadInputError(f"{field} must name a program or a .php file", code="invalid-agent", field=field)
    if stripped.endswith(".php") and " " not in stripped:
        path = _based(Path(stripped).expanduser(), base_dir)
        if not path.is_file():
            raise BadInputError(f"{field}: PHP agent {stripped!r} does not exist", code="invalid-agent", field=field)
        return AgentSpec(kind="php", php_file=path.resolve())
    try:
        argv = shlex.split(stripped)
    except ValueError as error:
        raise BadInputError(
            f"{field}: cannot split the command line: {error}", code="invalid-agent", field=field
        ) from None
    return AgentSpec(kind="command", argv=resolve_argv(argv, base_dir))


def resolve_argv(argv: list[str], base_dir: Path | None = None) -> list[str]:
    """The agent runs in an empty scratch folder: a program or argument naming an existing file relative to
    the caller's folder (``base_dir``) is made absolute (``python3 agents/mine.py`` keeps working)."""
    out: list[str] = []
    for index, item in enumerate(argv):
        relative = not Path(item).expanduser().is_absolute()
        path = _based(Path(item).expanduser(), base_dir)
        if not item.startswith("-") and ("/" in item or index > 0) and relative and path.is_file():
            out.append(os.path.normpath(os.path.abspath(path)))  # symlinks kept: a venv's python stays one
        else:
            out.append(item)
    return out


def check_agent(agent: AgentSpec, field: str = "agent") -> None:
    if agent.kind == "php":
        if agent.php_file is None or not agent.php_file.is_file():
            raise BadInputError(f"{field}: the PHP agent file does not exist", code="invalid-agent", field=field)
        return
    if not agent.argv:
        raise BadInputError(f"{field}: the agent command is empty", code="invalid-agent", field=field)
    program = agent.argv[0]
    found = (
        Path(program).expanduser() if "/" in program else (shutil.which(program) and Path(shutil.which(program) or ""))
    )
    if not found or not Path(found).is_file() or not os.access(found, os.X_OK):
        raise BadInputError(
            f"{field}: agent program {program!r} is not an executable file (or not on PATH)",
            code="invalid-agent",
            field=field,
        )


def agent_task_request_from_json(obj: Any, *, base_dir: Path | None = None) -> AgentTaskRequest:
    """One JSON / JSONL item → a request. Keys: ``task`` (string or task-input/v1), ``workspaces`` (or
    ``workspace``: ``"DIR[:/workspace/path]"`` strings or ``{source, target}``), ``agent`` (command line,
    ``.php`` path, argv list or ``{kind, argv|php_file}``), ``tools``, ``sandbox_session_id``,
    ``session_id``, ``orchestrator``, ``timeout`` / ``tool_timeout`` / ``boot_timeout`` (durations),
    ``policy``, ``env``, ``agent_env``, ``wp``, ``php``, ``backend``, ``artifacts``. Relative paths are relative to
    ``base_dir`` (a batch file's folder; default: the current folder). Errors name the JSON path."""
    if not isinstance(obj, dict):
        raise BadInputError("$: an agent task must be a JSON object", code="invalid-agent-task", field="$")
    data = dict(obj)
    known = {
        "task",
        "workspaces",
        "workspace",
        "agent",
        "tools",
        "sandbox_session_id",
        "session_id",
        "orchestrator",
        "timeout",
        "tool_timeout",
        "boot_timeout",
        "policy",
        "env",
        "agent_env",
        "wp",
        "php",
        "backend",
        "artifacts",
    }
    for key in data:
        if key not in known:
            raise BadInputError(
                f"$.{key}: unknown field; expected some of {', '.join(sorted(known))}",
                code="invalid-agent-task",
                field=f"$.{key}",
            )
    if "task" not in data:
        raise BadInputError("$.task: required", code="invalid-agent-task", field="$.task")
    fields: dict[str, Any] = {"task": task_from_value(data["task"], "$.task")}
    raw_ws = data.get("workspaces", data.get("workspace"))
    raw_ws = [raw_ws] if isinstance(raw_ws, str | dict) else raw_ws
    if not isinstance(raw_ws, list) or not raw_ws:
        raise BadInputError(
            '$.workspaces: a non-empty list of "DIR[:/workspace/path]" is required',
            code="invalid-agent-task",
            field="$.workspaces",
        )
    mounts = []
    for index, item in enumerate(raw_ws):
        where = f"$.workspaces[{index}]"
        if isinstance(item, str):
            try:
                mounts.append(workspace_from_text(item, index, base_dir))
            except BadInputError as error:
                raise BadInputError(f"{where}: {error.message}", code=error.code, field=where) from None
        elif isinstance(item, dict):
            try:
                based = (
                    {**item, "source": _based(Path(item["source"]).expanduser(), base_dir)}
                    if isinstance(item.get("source"), str) and item["source"]
                    else item
                )
                mounts.append(WorkspaceMount.model_validate(based))
            except ValidationError as error:
                raise _named(error, where) from None
        else:
            raise BadInputError(f"{where}: expected a string or an object", code="invalid-agent-task", field=where)
    fields["workspaces"] = mounts
    agent = data.get("agent")
    if isinstance(agent, str):
        fields["agent"] = agent_from_text(agent, "$.agent", base_dir)
    elif isinstance(agent, list) and agent and all(isinstance(a, str) for a in agent):
        fields["agent"] = AgentSpec(kind="command", argv=resolve_argv(list(agent), base_dir))
    elif isinstance(agent, dict):
        try:
            spec = AgentSpec.model_validate(agent)
            if spec.php_file is not None:
                spec.php_file = _based(spec.php_file.expanduser(), base_dir)
            fields["agent"] = spec.model_copy(update={"argv": resolve_argv(spec.argv, base_dir)})
        except ValidationError as error:
            raise _named(error, "$.agent") from None
    else:
        raise BadInputError(
            "$.agent: expected a command line, an argv list or {kind, argv|php_file}",
            code="invalid-agent-task",
            field="$.agent",
        )
    for key, name in (("timeout", "timeout_s"), ("tool_timeout", "tool_timeout_s"), ("boot_timeout", "boot_timeout_s")):
        if key in data and data[key] is not None:
            fields[name] = parse_duration(str(data[key]), f"$.{key}")
    if "artifacts" in data and data["artifacts"] is not None:
        fields["artifacts_root"] = _based(Path(str(data["artifacts"])).expanduser(), base_dir)
    for key in (
        "tools",
        "sandbox_session_id",
        "session_id",
        "orchestrator",
        "policy",
        "env",
        "agent_env",
        "wp",
        "php",
        "backend",
    ):
        if key in data and data[key] is not None:
            fields[key] = data[key]
    if isinstance(fields.get("tools"), str):
        fields["tools"] = [t.strip() for t in fields["tools"].split(",") if t.strip()]
    try:
        request = AgentTaskRequest.model_validate(fields)
    except ValidationError as error:
        raise _named(error, "$") from None
    check_agent(request.agent, "$.agent")
    return request


def _based(path: Path, base_dir: Path | None) -> Path:
    return path if path.is_absolute() or base_dir is None else base_dir / path


def _named(error: ValidationError, prefix: str) -> BadInputError:
    first = error.errors()[0]
    where = prefix + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
    return BadInputError(f"{where}: {first['msg']}", code="invalid-agent-task", field=where)
