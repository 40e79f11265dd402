"""``codebox agent-task``: one agent task in a disposable sandbox (docs/agent-tasks.md)."""

from __future__ import annotations

from pathlib import Path

import typer
from pydantic import ValidationError

from codebox_tui.agents import (
    AgentTaskOutcome,
    AgentTaskRequest,
    agent_from_text,
    run_agent_task,
    task_from_text,
    workspace_from_text,
)
from codebox_tui.batch import agent_fan_out, run_batch
from codebox_tui.batch.progress import ProgressTable
from codebox_tui.cli.output import BACKEND_HELP, emit_json, progress
from codebox_tui.contracts.agent import Orchestrator
from codebox_tui.durations import parse_duration
from codebox_tui.errors import BadInputError, ExitCode
from codebox_tui.lifecycle import env_from_pairs, policy_from_text
from codebox_tui.lifecycle.request import json_object_from_text
from codebox_tui.progress_report import StderrProgress
from codebox_tui.runtime.backends import backend_name
from codebox_tui.versions import DEFAULT_PHP_VERSION, DEFAULT_WP_VERSION


def _orchestrator(text: str | None) -> Orchestrator | None:
    if not text:
        return None
    value = json_object_from_text(
        text, "--orchestrator", "invalid-orchestrator", example=' like {"type": …, "id": …, "job_id": …}'
    )
    try:
        return Orchestrator.model_validate(value)
    except ValidationError as error:
        raise _option_error(error, "--orchestrator") from None


def _option_error(error: ValidationError, option: str, *, skip: int = 0) -> BadInputError:
    """The first problem pydantic found, named by the option and the field inside it (after ``skip`` parts of its
    location, which the option already names)."""
    first = error.errors()[0]
    inner = ".".join(str(p) for p in first["loc"][skip:])
    return BadInputError(
        f"{option}{': ' + inner if inner else ''}: {first['msg']}", code="invalid-agent-task", field=option
    )


def agent_task_command(
    task: str = typer.Option(..., "--task", "-t", help="The task: a task-input/v1 JSON file, a text file, or text."),
    workspace: list[str] = typer.Option(
        ..., "--workspace", "-w", help="DIR[:/workspace/path] (repeatable); a private read-write copy."
    ),
    agent: str = typer.Option(
        ...,
        "--agent",
        help="The agent: a command line speaking the JSON-lines protocol, or a .php file run inside the sandbox.",
    ),
    tools: str | None = typer.Option(
        None, "--tools", help="Comma-separated tools to expose (default: every workspace tool)."
    ),
    sandbox_session_id: str | None = typer.Option(
        None, "--sandbox-session-id", help="Caller's session id (echoed, recorded)."
    ),
    session_id: str | None = typer.Option(None, "--session-id", help="The agent's own conversation id."),
    orchestrator: str | None = typer.Option(None, "--orchestrator", help="Correlation JSON {type, id, job_id}."),
    artifacts: Path | None = typer.Option(
        None,
        "--artifacts",
        "--artifacts-dir",
        help="Folder that receives the bundle (default: $CODEBOX_HOME/artifacts).",
    ),
    timeout: str = typer.Option("10m", "--timeout", help="Time limit for the agent, e.g. 90s, 10m."),
    tool_timeout: str = typer.Option("60s", "--tool-timeout", help="Time limit for one tool call."),
    boot_timeout: str = typer.Option("120s", "--boot-timeout", help="Time limit for booting the sandbox."),
    policy: str | None = typer.Option(None, "--policy", help="Runtime policy: inline JSON or a JSON file."),
    env: list[str] = typer.Option([], "--env", "-e", help="NAME=VALUE for the sandbox's PHP (repeatable)."),
    agent_env: list[str] = typer.Option(
        [], "--agent-env", help="Name of a variable the host agent receives (repeatable; e.g. its API key)."
    ),
    wp: str = typer.Option(DEFAULT_WP_VERSION, "--wp", help="WordPress build: 6.2–6.5, beta, nightly."),
    php: str | None = typer.Option(
        None,
        "--php",
        help=f"PHP version (7.4, 8.0–8.5; default {DEFAULT_PHP_VERSION}); "
        "on --backend native only the host's, its default.",
    ),
    backend: str | None = typer.Option(None, "--backend", help=BACKEND_HELP),
    fan_out: int = typer.Option(
        1,
        "--fan-out",
        help="Run N candidates of the task, each in its own sandbox, on "
        "Ray; they land in the inbox as one group to compare.",
    ),
    concurrency: int | None = typer.Option(
        None, "--concurrency", help="With --fan-out: candidates in flight at once (default: what Ray's CPUs hold)."
    ),
    ray_address: str | None = typer.Option(
        None, "--ray-address", help="With --fan-out: a running Ray cluster (default: a private local instance)."
    ),
    json_out: bool = typer.Option(
        False, "--json", help="Print one codebox/agent-task/v1 document on stdout (with --fan-out: the batch document)."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress lines on stderr."),
) -> None:
    """Run an agent on a task in a disposable sandbox; it edits only the sandbox's /workspace copy, through
    tools, and leaves a bundle for review."""
    try:
        request = _request(
            task,
            workspace,
            agent,
            tools,
            sandbox_session_id,
            session_id,
            orchestrator,
            artifacts,
            timeout,
            tool_timeout,
            boot_timeout,
            policy,
            env,
            agent_env,
            wp,
            php,
            backend,
        )
    except ValidationError as error:  # a field the model limits (an id too long, a timeout of 0)
        loc = error.errors()[0]["loc"]
        name = str(loc[0]) if loc else "task"
        name = {
            "timeout_s": "timeout",
            "tool_timeout_s": "tool-timeout",
            "boot_timeout_s": "boot-timeout",
            "workspaces": "workspace",
            "artifacts_root": "artifacts",
        }.get(name, name.replace("_", "-"))
        raise _option_error(error, "--" + name, skip=1) from None
    if fan_out != 1:
        _fan_out(request, fan_out, concurrency=concurrency, ray_address=ray_address, json_out=json_out, quiet=quiet)
    outcome = run_agent_task(request, progress=StderrProgress("agent-task", quiet=quiet))
    _report(outcome, json_out)


def _request(
    task: str,
    workspace: list[str],
    agent: str,
    tools: str | None,
    sandbox_session_id: str | None,
    session_id: str | None,
    orchestrator: str | None,
    artifacts: Path | None,
    timeout: str,
    tool_timeout: str,
    boot_timeout: str,
    policy: str | None,
    env: list[str],
    agent_env: list[str],
    wp: str,
    php: str | None,
    backend: str | None,
) -> AgentTaskRequest:
    return AgentTaskRequest(
        task=task_from_text(task),
        workspaces=[workspace_from_text(text, index) for index, text in enumerate(workspace)],
        agent=agent_from_text(agent),
        tools=[t.strip() for t in tools.split(",") if t.strip()] if tools is not None else None,
        sandbox_session_id=sandbox_session_id,
        session_id=session_id,
        orchestrator=_orchestrator(orchestrator),
        policy=policy_from_text(policy),
        timeout_s=parse_duration(timeout, "--timeout"),
        tool_timeout_s=parse_duration(tool_timeout, "--tool-timeout"),
        boot_timeout_s=parse_duration(boot_timeout, "--boot-timeout"),
        env=env_from_pairs(env),
        agent_env=list(agent_env),
        wp=wp,
        php=php,
        backend=backend_name(backend),
        artifacts_root=artifacts,
    )


def _report(outcome: AgentTaskOutcome, json_out: bool) -> None:
    if json_out:
        emit_json(outcome.to_json())
    else:
        completion = outcome.completion_outcome
        result = outcome.agent_result
        if result is not None and completion is not None:
            progress(
                outcome.run.redact(
                    f"codebox: {completion.status} ({completion.confidence} confidence, next: "
                    f"{completion.nextAction}): {result.summary}"
                )
            )
        failure = outcome.run.failure_text()
        if failure and outcome.exit_code != 0:
            progress(f"codebox: {failure}")
        progress(f"codebox: bundle {outcome.bundle_id or '(not captured)'} in {outcome.run.run_dir}")
        if outcome.inbox_key is not None:
            progress(f"codebox: review it with: codebox review show @{outcome.inbox_key}")
    raise typer.Exit(outcome.exit_code)


def _fan_out(
    request: AgentTaskRequest,
    count: int,
    *,
    concurrency: int | None,
    ray_address: str | None,
    json_out: bool,
    quiet: bool,
) -> None:
    """``--fan-out N``: N candidates as one fan-out batch on Ray (docs/scale-out.md); exits like ``codebox batch``."""
    items = agent_fan_out(request, count)
    table = ProgressTable(quiet=quiet)
    try:
        outcome = run_batch(
            items,
            concurrency=concurrency,
            timeout_s=request.timeout_s + 300,
            retries=1,
            ray_address=ray_address,
            artifacts_root=request.artifacts_root,
            on_update=table.update,
            on_start=table.start,
            kind="fan-out",
            source=request.task.goal[:200],
            metadata={"fanOut": count, "agent": request.agent.label()},
        )
    finally:
        table.stop()
    if json_out:
        emit_json(outcome.to_dict())
    else:
        for state in outcome.items:
            item, _kind, shown, tries, verdict, bundle, now = ProgressTable.cells(state)
            progress(
                f"codebox: {shown:<12} {item:<14} attempts {tries}  {verdict or '-':<12} {bundle or '-':<6} "
                f"{now}".rstrip()
            )
        progress(
            f"codebox: fan-out {outcome.batch_id}; compare the candidates on Home (m) or with "
            "codebox review compare A B"
        )
    if outcome.interrupted:
        raise typer.Exit(int(ExitCode.INTERRUPTED))
    raise typer.Exit(int(ExitCode.OK if outcome.success else ExitCode.FAILED))


def register(app: typer.Typer) -> None:
    app.command("agent-task")(agent_task_command)
