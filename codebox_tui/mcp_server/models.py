"""The MCP tools' inputs and outputs (docs/mcp.md). The server publishes each tool's input and output
JSON Schemas generated from these models; the outputs reuse the project's own wire models
(``wp-codebox/run/v1``, ``wp-codebox/artifact-bundle-verification/v1``, the review decision,
``wp-codebox/apply-result/v1``, the inbox rows and the ``artifacts show`` summary).

Every input model is closed (``extra="forbid"``): a misspelt argument is an error naming it, not a
silently ignored option.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from codebox_tui.contracts.runtime import RunOutput
from codebox_tui.versions import DEFAULT_PHP_VERSION, DEFAULT_WP_VERSION
from store.inbox import FILTERS, SORTS, InboxRow

MOUNT_DESCRIPTION = (
    "HOST:SANDBOX[:readonly|readwrite|live] each, as `codebox run --mount` takes them: the host folder must "
    "exist (a relative path is relative to the server's working directory); readwrite works on a private "
    "copy, live writes through to HOST."
)
DURATION_DESCRIPTION = "A duration such as 30s, 2m or 1h; a bare number is seconds."


class ToolInput(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class RunInput(ToolInput):
    """``run``: boot a sandbox, run one catalog command, capture the bundle and record it for review."""

    command: str = Field(description="Runtime command id (`codebox commands` lists them), e.g. wordpress.run-php.")
    args: list[str] = Field(default_factory=list,
                            description="key=value arguments of the command, e.g. code=<?php echo 1;")
    mounts: list[str] = Field(default_factory=list, description=MOUNT_DESCRIPTION)
    wp: str = Field(default=DEFAULT_WP_VERSION, description="WordPress build: 6.2–6.5, beta, nightly.")
    php: str = Field(default=DEFAULT_PHP_VERSION, description="PHP version (7.4, 8.0–8.5).")
    policy: dict[str, Any] | str | None = Field(
        default=None, description="Runtime policy: an object, inline JSON text or the path of a JSON file; "
                                  "none: the default policy for the command.")
    env: dict[str, str] = Field(default_factory=dict, description="NAME → VALUE for PHP's getenv() (not secret).")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Opaque caller metadata recorded with the run.")
    timeout: str | float = Field(default="120s", description="Timeout for the command. " + DURATION_DESCRIPTION)
    boot_timeout: str | float = Field(default="120s", description="Timeout for booting. " + DURATION_DESCRIPTION)
    artifacts: str | None = Field(default=None, description="Folder that receives the bundle (default: "
                                                            "$CODEBOX_HOME/artifacts).")
    wp_cli_phar: str | None = Field(default=None, description="Path to wp-cli.phar (wordpress.wp-cli).")


class RunResult(BaseModel):
    """What ``run`` returns: the ``wp-codebox/run/v1`` document (as ``codebox run --json`` prints it) and
    where the run landed for review."""

    run: RunOutput
    status: str = Field(description="completed, failed or cancelled.")
    bundleDir: str | None = Field(default=None, description="The captured bundle folder (none: not captured).")
    contentDigestB: str | None = Field(default=None, description="The Mode B content digest review decisions "
                                                                 "bind to (pass it to review_decide).")
    inboxKey: int | None = Field(default=None, description="The review inbox record (`@KEY`).")
    warnings: list[str] = Field(default_factory=list)


class BundleInput(ToolInput):
    bundle: str = Field(description="A bundle folder (holds manifest.json), or a folder holding exactly one.")


class ReviewDecideInput(ToolInput):
    """``review_decide``: record a decision the way `codebox review approve|approve-files|discard` does."""

    bundle: str = Field(description="@KEY (list_runs), a bundle folder, a run id, or a unique bundle-id or "
                                    "content-digest prefix.")
    action: Literal["approve", "approve-files", "discard"] = Field(
        description="approve: every changed file; approve-files: the `files` (and `hunks`) given; discard: none.")
    files: list[str] = Field(default_factory=list,
                             description="approve-files: changed files (sandbox path, or a relativePath only one "
                                         "mount changed; an ambiguous one is refused naming the candidates).")
    hunks: dict[str, list[int]] = Field(
        default_factory=dict, description="Approve these files only in part: PATH → hunk numbers from 1, as "
                                          "`codebox review show` numbers them.")
    content_digest: str | None = Field(
        default=None, description="The content digest you reviewed (contentDigestB of run or artifacts_show): the "
                                  "decision is refused when the bundle's bytes no longer have it.")
    approver: str | None = Field(default=None, description="Who decides (default: the approver setting, or the "
                                                           "user the server runs as).")
    reason: str = Field(default="", description="Why.")


class ApplyInput(ToolInput):
    """``apply``: apply an approval decision after re-verifying the bundle and its content digest."""

    decision: str | int = Field(description="The decision id (review_decide's `id`).")
    adapter: str = Field(description="directory, git, patch or an installed adapter.")
    target: str = Field(description="Mount-root folder (directory), git work tree (git) or patch file (patch).")
    branch: str | None = Field(default=None, description="git: create this branch and commit on it.")
    commit: bool = Field(default=False, description="git: commit the approved files.")
    message: str | None = Field(default=None, description="git: the commit message.")


class ListRunsInput(ToolInput):
    """``list_runs``: the review inbox, as the Home screen lists it."""

    filter: str = Field(default="all", description="One of: " + ", ".join(FILTERS) + ".")
    text: str = Field(default="", description="Only rows with every word (title, source, verdict, decision, flags, "
                                              "id or path).")
    sort: str = Field(default="newest", description="One of: " + ", ".join(SORTS) + ".")
    limit: int = Field(default=100, ge=1, le=1000, description="At most this many rows.")


class ListRunsResult(BaseModel):
    rows: list[InboxRow]
    total: int = Field(description="How many rows matched before the limit.")


class AgentTaskInput(ToolInput):
    """``agent_task``: run an agent on a task in a sandbox (docs/agent-tasks.md)."""

    task: dict[str, Any] = Field(description=(
        "One agent task, as an item of `codebox agent-task --tasks FILE.jsonl`: `task` (text or a "
        "wp-codebox/task-input/v1 document), `workspaces` (\"DIR[:/workspace/path]\", absolute paths), `agent` "
        "(command line, argv list or .php path), and optional `tools`, `sandbox_session_id`, `orchestrator`, "
        "`timeout`, `policy`."))
