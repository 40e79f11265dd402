"""``codebox mcp``: Codebox's operations as MCP tools over stdio (docs/mcp.md).

Each tool is an operation of :mod:`codebox_tui.mcp_server.operations` with an input model and an
output model (:mod:`codebox_tui.mcp_server.models`); the SDK publishes their generated JSON Schemas.
A tool's arguments are its input model's fields, validated by the SDK and then again by the closed
model. Operations run on a worker thread, so a run that takes minutes never blocks the protocol.

Errors: a :class:`~codebox_tui.errors.CodeboxError` (bad input, policy denial, conflict, …) or a host
I/O error becomes an MCP tool error naming the field; anything else is a tool error with no details
(the SDK logs the traceback on stderr, never on the wire). stdout carries only the protocol: while it
serves, the SDK points fd 1 at stderr, so a stray print or a child's output cannot corrupt it.
"""

from __future__ import annotations

import inspect
import sys
import threading
from collections.abc import Callable
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
from anyio.lowlevel import EventLoopToken, current_token
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, create_model

from codebox_tui import __version__
from codebox_tui.bundle.summary import ArtifactSummary
from codebox_tui.contracts.apply import ApplyResult, Decision
from codebox_tui.contracts.bundle import BundleVerification
from codebox_tui.errors import CodeboxError
from codebox_tui.lifecycle import RunControl
from codebox_tui.mcp_server import flows, operations
from codebox_tui.mcp_server.models import (
    AgentTaskInput,
    ApplyInput,
    BatchInput,
    BundleInput,
    EpisodeRunInput,
    EvaluatePatchInput,
    ExecuteInput,
    ExecuteResult,
    FlowResult,
    ListRunsInput,
    ListRunsResult,
    RecipeRunInput,
    ReviewDecideInput,
    RunInput,
    RunResult,
    ToolInput,
)
from codebox_tui.progress_report import StderrProgress

SERVER_NAME = "codebox"
INSTRUCTIONS = (
    "Codebox runs untrusted WordPress changes in disposable WordPress Playground sandboxes and captures a "
    "hash-verified artifact bundle. Typical flow: run → artifacts_show / artifacts_verify → review_decide "
    "(bound to the contentDigestB you reviewed) → apply. list_runs lists the review inbox. execute runs a shell "
    "command line in a sandbox (read-only unless you pass the write or eval capability); evaluate_patch, recipe_run, "
    "episode_run and batch run Codebox's flows and return their documents and bundles."
)

# CLI flag names some checks report → the tool argument they correspond to
_FIELD_NAMES = {
    "--hunk": "hunks",
    "--file": "files",
    "code-file": "args",
    "--arg": "args",
    "--command": "command",
    "--policy": "policy",
    "--env": "env",
    "env": "env",
    "--metadata": "metadata",
    "--wp": "wp",
    "--php": "php",
    "--timeout": "timeout",
    "--boot-timeout": "boot_timeout",
    "--adapter": "adapter",
    "--target": "target",
    "--branch": "branch",
    "--artifacts": "artifacts",
    "wp-cli-phar": "wp_cli_phar",
    "mount": "mounts",
    "--sandbox": "sandbox",
    "--capabilities": "capabilities",
    "--cwd": "cwd",
    "--plugin": "plugin",
    "--patch": "patch",
    "--git": "git_range",
    "--slug": "slug",
    "--test": "tests",
    "--tests-path": "tests_paths",
    "--phpunit-xml": "phpunit_xml",
    "--bootstrap": "bootstrap",
    "--wordpress": "wordpress",
    "--wp-tests-lib": "wp_tests_lib",
    "--phpunit-polyfills": "phpunit_polyfills",
    "--url": "url",
    "--concurrency": "concurrency",
    "--retries": "retries",
    "--ray-address": "ray_address",
}


def tool_error(error: CodeboxError) -> ToolError:
    """``field: message [code]`` (plus the hint, if any) — what the caller needs to correct its input."""
    field = error.field or ""
    field = _FIELD_NAMES.get(field, field)
    text = f"{field}: {error.message}" if field else error.message
    hint = error.details.get("hint") if error.details else None
    return ToolError(f"{text} [{error.code}]" + (f" (hint: {hint})" if hint else ""))


class McpProgress(StderrProgress):
    """The run's progress lines (the same ones ``codebox run`` prints on stderr) as MCP progress
    notifications, when the client asked for them; also written to stderr for the server's log.

    Lines come from the operation's worker thread and from the runtime's event threads, so each is
    sent through the event loop's token, one at a time (the counter stays in order)."""

    def __init__(self, label: str, ctx: Context, token: EventLoopToken) -> None:
        super().__init__(label, stream=sys.stderr)
        self.ctx = ctx
        self.token = token
        self.count = 0
        self.lock = threading.Lock()

    def line(self, text: str) -> None:
        super().line(text)
        with self.lock:
            self.count += 1
            try:  # a client gone away (or a request cancelled) must not fail the run
                anyio.from_thread.run(self.ctx.report_progress, float(self.count), None, text, token=self.token)
            except Exception as error:
                sys.stderr.write(f"codebox mcp: progress not sent: {error}\n")


Operation = Callable[..., Any]


async def _call(name: str, operation: Operation, params: ToolInput, ctx: Context, *, long: bool) -> Any:
    """Run ``operation`` on a worker thread; a long one reports progress and is cancelled with the request."""
    control = RunControl()
    kwargs: dict[str, Any] = {"progress": McpProgress(name, ctx, current_token()), "control": control} if long else {}

    def work() -> Any:
        try:
            return operation(params, **kwargs)
        except CodeboxError as error:
            raise tool_error(error) from None
        except OSError as error:  # the host's file system, not a bug
            where = f"{error.filename}: " if error.filename else ""
            raise ToolError(f"{where}{error.strerror or error} [host-io-error]") from None

    if not long:
        return await anyio.to_thread.run_sync(work)
    finished = False

    async def cancel_with_the_request() -> None:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            if not finished:  # the run stops, captures what it has and is recorded as cancelled
                control.cancel("was cancelled by the MCP client")
            raise

    def outcome() -> tuple[Any, ToolError | None]:
        try:
            return work(), None
        except ToolError as error:  # raised below, outside the task group (which would wrap it in a group)
            return None, error

    async with anyio.create_task_group() as group:
        group.start_soon(cancel_with_the_request)
        # not abandoned on cancel: the request ends only once the run is captured and recorded
        value, error = await anyio.to_thread.run_sync(outcome)
        finished = True
        group.cancel_scope.cancel()
    if error is not None:
        raise error
    return value


class ToolSpec(BaseModel):
    name: str
    title: str
    description: str
    read_only: bool
    long: bool = False


class _ClosedArguments(ArgModelBase):
    """A tool's arguments: unknown names are refused (a misspelt option is an error, not ignored)."""

    model_config = ConfigDict(extra="forbid")


def make_tool(spec: ToolSpec, input_model: type[ToolInput], output: Any, operation: Operation) -> Tool:
    """The SDK tool for one operation: its arguments are ``input_model``'s fields (the published input
    schema is generated from the model, closed to other names), its structured result is ``output``."""

    async def tool(ctx: Context, **arguments: Any) -> Any:
        try:
            params = input_model.model_validate(arguments)
        except ValueError as error:
            raise ToolError(str(error)) from None
        return await _call(spec.name, operation, params, ctx, long=spec.long)

    # what the SDK reads: the context parameter and the return type (the arguments come from the model below)
    context = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)
    tool.__signature__ = inspect.Signature([context], return_annotation=output)  # type: ignore[attr-defined]
    tool.__annotations__ = {"ctx": Context, "return": output}
    made = Tool.from_function(
        tool,
        name=spec.name,
        title=spec.title,
        description=spec.description,
        structured_output=True,
        annotations=ToolAnnotations(
            title=spec.title,
            read_only_hint=spec.read_only,
            destructive_hint=False if spec.read_only else None,
            open_world_hint=False,
        ),
    )
    fields: dict[str, Any] = {name: (info.annotation, info) for name, info in input_model.model_fields.items()}
    arguments_model = create_model(f"{spec.name}Arguments", __base__=_ClosedArguments, **fields)
    made.fn_metadata.arg_model = arguments_model  # the SDK reads it at every call
    made.parameters = arguments_model.model_json_schema(by_alias=True)
    return made


TOOLS: list[tuple[ToolSpec, type[ToolInput], Any, Operation]] = [
    (
        ToolSpec(
            name="run",
            title="Run a command in a disposable WordPress sandbox",
            long=True,
            read_only=False,
            description="Boot a WordPress Playground sandbox with the given mounts and policy, run one catalog "
            "command, capture the hash-verified artifact bundle, dispose the sandbox and record the "
            "run in the review inbox. Host folders change only through apply, never during the run. "
            "Returns the wp-codebox/run/v1 document, the bundle folder, its content digest and the "
            "inbox key.",
        ),
        RunInput,
        RunResult,
        operations.run,
    ),
    (
        ToolSpec(
            name="artifacts_show",
            title="Summarize an artifact bundle",
            read_only=True,
            description="A bundle's identity, verification, changed files, tests, checks, risk flags, site-state "
            "changes and evidence (codebox artifacts show --json).",
        ),
        BundleInput,
        ArtifactSummary,
        operations.artifacts_show,
    ),
    (
        ToolSpec(
            name="artifacts_verify",
            title="Verify an artifact bundle",
            read_only=True,
            description="Verify every hash, digest and reference of a bundle; valid is false on any violation "
            "(wp-codebox/artifact-bundle-verification/v1).",
        ),
        BundleInput,
        BundleVerification,
        operations.artifacts_verify,
    ),
    (
        ToolSpec(
            name="review_decide",
            title="Record a review decision",
            read_only=False,
            description="Approve every changed file, approve some files (or hunks), or discard a bundle. The "
            "decision is computed from the re-verified bundle and bound to its content digest; pass "
            "content_digest to have it refused if the bytes are not the ones you reviewed.",
        ),
        ReviewDecideInput,
        Decision,
        operations.review_decide,
    ),
    (
        ToolSpec(
            name="apply",
            title="Apply an approved decision",
            read_only=False,
            description="Write a decision's approved files to a target through an apply adapter (directory, git, "
            "patch), after re-verifying the bundle and the decision's content digest. Returns "
            "wp-codebox/apply-result/v1.",
        ),
        ApplyInput,
        ApplyResult,
        operations.apply,
    ),
    (
        ToolSpec(
            name="list_runs",
            title="List the review inbox",
            read_only=True,
            description="Recorded bundles (runs, recipe runs, patch evaluations, imports) with status, latest "
            "decision, title, verdict, test delta and risk flags, newest first.",
        ),
        ListRunsInput,
        ListRunsResult,
        operations.list_runs,
    ),
    (
        ToolSpec(
            name="agent_task",
            title="Run an agent task in a sandbox",
            long=True,
            read_only=False,
            description="Run an agent on a wp-codebox/task-input/v1 task inside a disposable sandbox; the result "
            "is a bundle for review like any other.",
        ),
        AgentTaskInput,
        dict[str, Any],
        operations.agent_task,
    ),
    (
        ToolSpec(
            name="execute",
            title="Run a shell command line in a sandbox",
            long=True,
            read_only=False,
            description="Run a command line in the sandbox's own bash interpreter (no host shell; only the "
            "sandbox's files; on rg, wp, jq and the usual text tools). It is classified read_only, "
            "sandbox_write or eval and refused before it runs unless capabilities allow it (default: "
            "read). On a held sandbox (sandbox: its runtime id) or a fresh one with mounts, which is "
            "captured as a bundle for review. Returns wp-codebox/exec-result/v1 (classification, exit "
            "code, stdout, stderr) and the bundle.",
        ),
        ExecuteInput,
        ExecuteResult,
        flows.execute,
    ),
    (
        ToolSpec(
            name="evaluate_patch",
            title="Evaluate a patch to a plugin",
            long=True,
            read_only=False,
            description="Apply a patch file (or a git range of the plugin's repository) to a copy of a plugin in "
            "a sandbox, run its PHPUnit tests before and after and probe the front end. Returns the "
            "evaluation document (verdict improvement / neutral / regression / untested / "
            "plugin-broken, the test delta) and the bundle. The plugin folder is never modified.",
        ),
        EvaluatePatchInput,
        FlowResult,
        flows.evaluate_patch,
    ),
    (
        ToolSpec(
            name="recipe_run",
            title="Run a workspace recipe",
            long=True,
            read_only=False,
            description="Run a workspace recipe (wp-codebox/workspace-recipe/v1) in a fresh sandbox: set-up, "
            "steps, probes, declared artifacts. Returns the outcome (status, failures, probes) and "
            "the bundle; an invalid recipe is an error listing every problem by its JSON path.",
        ),
        RecipeRunInput,
        FlowResult,
        flows.recipe_run,
    ),
    (
        ToolSpec(
            name="episode_run",
            title="Run an episode plan",
            long=True,
            read_only=False,
            description="Run an episode plan (codebox/episode-plan/v1) step by step in one sandbox, with "
            "observations, snapshots and restores. Returns codebox/episode-result/v1 and the bundle "
            "with the episode trace.",
        ),
        EpisodeRunInput,
        FlowResult,
        flows.episode_run,
    ),
    (
        ToolSpec(
            name="batch",
            title="Run a batch of items on Ray",
            long=True,
            read_only=False,
            description="Run every item of a batch file (JSON Lines: evaluate-patch, recipe-run and agent-task "
            "items) in its own sandbox on Ray and record the batch for review. Returns the batch "
            "document with each item's state, verdict and bundle.",
        ),
        BatchInput,
        FlowResult,
        flows.batch,
    ),
]


def build_server() -> MCPServer[Any]:
    """The server with every Codebox tool registered."""
    return MCPServer(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        tools=[make_tool(*entry) for entry in TOOLS],
    )


def serve_stdio() -> None:
    """Serve on stdin/stdout until the client closes the connection."""
    server = build_server()
    sys.stderr.write(
        f"codebox mcp {__version__}: serving {len(TOOLS)} tools over stdio (an MCP host starts "
        "this command; docs/mcp.md); logs on stderr\n"
    )
    sys.stderr.flush()
    server.run("stdio")
