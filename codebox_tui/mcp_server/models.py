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

from codebox_tui.contracts.exec import ExecResult
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
    args: list[str] = Field(
        default_factory=list, description="key=value arguments of the command, e.g. code=<?php echo 1;"
    )
    mounts: list[str] = Field(default_factory=list, description=MOUNT_DESCRIPTION)
    wp: str = Field(default=DEFAULT_WP_VERSION, description="WordPress build: 6.2–6.5, beta, nightly.")
    php: str | None = Field(
        default=None,
        description=f"PHP version (default: the backend's, {DEFAULT_PHP_VERSION} on "
        "playground, the host's on native; 7.4, 8.0–8.5 on playground).",
    )
    backend: Literal["playground", "native"] | None = Field(
        default=None, description="Runtime backend (default: CODEBOX_BACKEND, else playground; docs/backends.md)."
    )
    policy: dict[str, Any] | str | None = Field(
        default=None,
        description="Runtime policy: an object, inline JSON text or the path of a JSON file; "
        "none: the default policy for the command.",
    )
    env: dict[str, str] = Field(default_factory=dict, description="NAME → VALUE for PHP's getenv() (not secret).")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Opaque caller metadata recorded with the run.")
    timeout: str | float = Field(default="120s", description="Timeout for the command. " + DURATION_DESCRIPTION)
    boot_timeout: str | float = Field(default="120s", description="Timeout for booting. " + DURATION_DESCRIPTION)
    artifacts: str | None = Field(
        default=None, description="Folder that receives the bundle (default: $CODEBOX_HOME/artifacts)."
    )
    wp_cli_phar: str | None = Field(default=None, description="Path to wp-cli.phar (wordpress.wp-cli).")


class RunResult(BaseModel):
    """What ``run`` returns: the ``wp-codebox/run/v1`` document (as ``codebox run --json`` prints it) and
    where the run landed for review."""

    run: RunOutput
    status: str = Field(description="completed, failed or cancelled.")
    bundleDir: str | None = Field(default=None, description="The captured bundle folder (none: not captured).")
    contentDigestB: str | None = Field(
        default=None, description="The Mode B content digest review decisions bind to (pass it to review_decide)."
    )
    inboxKey: int | None = Field(default=None, description="The review inbox record (`@KEY`).")
    warnings: list[str] = Field(default_factory=list)


class BundleInput(ToolInput):
    bundle: str = Field(description="A bundle folder (holds manifest.json), or a folder holding exactly one.")


class ReviewDecideInput(ToolInput):
    """``review_decide``: record a decision the way `codebox review approve|approve-files|discard` does."""

    bundle: str = Field(
        description="@KEY (list_runs), a bundle folder, a run id, or a unique bundle-id or content-digest prefix."
    )
    action: Literal["approve", "approve-files", "discard"] = Field(
        description="approve: every changed file; approve-files: the `files` (and `hunks`) given; discard: none."
    )
    files: list[str] = Field(
        default_factory=list,
        description="approve-files: changed files (sandbox path, or a relativePath only one "
        "mount changed; an ambiguous one is refused naming the candidates).",
    )
    hunks: dict[str, list[int]] = Field(
        default_factory=dict,
        description="Approve these files only in part: PATH → hunk numbers from 1, as "
        "`codebox review show` numbers them.",
    )
    content_digest: str | None = Field(
        default=None,
        description="The content digest you reviewed (contentDigestB of run or artifacts_show): the "
        "decision is refused when the bundle's bytes no longer have it.",
    )
    approver: str | None = Field(
        default=None, description="Who decides (default: the approver setting, or the user the server runs as)."
    )
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
    text: str = Field(
        default="", description="Only rows with every word (title, source, verdict, decision, flags, id or path)."
    )
    sort: str = Field(default="newest", description="One of: " + ", ".join(SORTS) + ".")
    limit: int = Field(default=100, ge=1, le=1000, description="At most this many rows.")


class ListRunsResult(BaseModel):
    rows: list[InboxRow]
    total: int = Field(description="How many rows matched before the limit.")


class AgentTaskInput(ToolInput):
    """``agent_task``: run an agent on a task in a sandbox (docs/agent-tasks.md)."""

    task: dict[str, Any] = Field(
        description=(
            "One agent task, as an item of `codebox agent-task --tasks FILE.jsonl`: `task` (text or a "
            'wp-codebox/task-input/v1 document), `workspaces` ("DIR[:/workspace/path]", absolute paths), `agent` '
            "(command line, argv list or .php path), and optional `tools`, `sandbox_session_id`, `orchestrator`, "
            "`timeout`, `policy`."
        )
    )


class ExecuteInput(ToolInput):
    """``execute``: a command line in a sandbox's own shell, classified and checked against ``capabilities``
    before anything runs (docs/exec.md) — on a held sandbox (``sandbox``) or on a fresh one with ``mounts``."""

    command: str = Field(min_length=1, description='The command line, e.g. "on rg -n add_action --plugins".')
    capabilities: list[Literal["read", "write", "eval"]] = Field(
        default=["read"],  # pydantic copies it for every call
        description="read (always in force), write (sandbox files and database rows), eval (wp eval / wp "
        "eval-file). A command classified as needing more is refused before it runs.",
    )
    sandbox: str | None = Field(
        default=None,
        description="The runtime id of a sandbox held by `codebox boot "
        "--hold`; none: a fresh sandbox, captured as a bundle.",
    )
    cwd: str = Field(default="/wordpress", description="Working folder inside the sandbox.")
    timeout: str | float = Field(default="30s", description="Time limit for the command. " + DURATION_DESCRIPTION)
    max_output: int = Field(default=1024 * 1024, ge=1, description="Output limit in bytes.")
    mounts: list[str] = Field(default_factory=list, description="Fresh sandbox only. " + MOUNT_DESCRIPTION)
    wp: str = Field(default=DEFAULT_WP_VERSION, description="Fresh sandbox only: the WordPress build.")
    php: str | None = Field(
        default=None,
        description=f"Fresh sandbox only: the PHP version (default: the backend's, "
        f"{DEFAULT_PHP_VERSION} on playground, the host's on native).",
    )
    backend: Literal["playground", "native"] | None = Field(
        default=None,
        description="Fresh sandbox only: the runtime backend (default: CODEBOX_BACKEND, else "
        "playground; docs/backends.md).",
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="Fresh sandbox only: NAME → VALUE for PHP's getenv() (not secret)."
    )
    boot_timeout: str | float = Field(
        default="120s", description="Fresh sandbox only: timeout for booting. " + DURATION_DESCRIPTION
    )
    artifacts: str | None = Field(
        default=None,
        description="Fresh sandbox only: folder that receives the bundle (default: $CODEBOX_HOME/artifacts).",
    )
    wp_cli_phar: str | None = Field(default=None, description="Fresh sandbox only: path to wp-cli.phar for `wp`.")


class BundleRef(BaseModel):
    """Where a flow's bundle landed for review."""

    bundleDir: str | None = Field(default=None, description="The captured bundle folder (none: not captured).")
    contentDigestB: str | None = Field(
        default=None, description="The Mode B content digest review decisions bind to (pass it to review_decide)."
    )
    inboxKey: int | None = Field(default=None, description="The review inbox record (`@KEY`).")


class ExecuteResult(BaseModel):
    """What ``execute`` returns: the ``wp-codebox/exec-result/v1`` document (classification, exit code, output)
    and, for a fresh sandbox, its bundle."""

    result: ExecResult
    status: str = Field(description="completed or failed (a non-zero exit).")
    bundle: BundleRef | None = Field(
        default=None,
        description="Fresh sandbox: the run's bundle; none on a held "
        "sandbox (its holder captures one bundle at the end).",
    )


class EvaluatePatchInput(ToolInput):
    """``evaluate_patch``: a patch (or a git range) on a copy of a plugin, its tests before and after
    (docs/evaluate-patch.md)."""

    plugin: str = Field(description="The plugin folder (never modified).")
    patch: str | None = Field(default=None, description="The contributor's patch file (git diff / unified diff).")
    git_range: str | None = Field(
        default=None, description="BASE..HEAD (or one commit) of the plugin's own git repository, instead of patch."
    )
    slug: str | None = Field(default=None, description="Plugin slug (default: the folder's name).")
    tests_paths: list[str] = Field(
        default_factory=list, description="Globs of the patch's paths that are tests (replace the default rule)."
    )
    tests: list[str] = Field(default_factory=list, description="Plugin-relative test files (default: the suite).")
    phpunit_xml: str | None = Field(default=None, description="Plugin-relative PHPUnit configuration.")
    filter: str | None = Field(default=None, description="PHPUnit --filter pattern.")
    bootstrap: str | None = Field(default=None, description="Plugin-relative PHPUnit bootstrap.")
    wordpress: Literal["auto", "tests-lib", "global", "none"] = Field(
        default="auto", description="How WordPress is loaded for the tests (docs/evaluate-patch.md)."
    )
    env: dict[str, str] = Field(default_factory=dict, description="NAME → VALUE for PHP and PHPUnit.")
    wp: str = Field(default=DEFAULT_WP_VERSION, description="WordPress build.")
    php: str | None = Field(
        default=None,
        description=f"PHP version (default: the backend's, {DEFAULT_PHP_VERSION} on playground, the host's on native).",
    )
    backend: Literal["playground", "native"] | None = Field(
        default=None, description="Runtime backend (default: CODEBOX_BACKEND, else playground; docs/backends.md)."
    )
    wp_tests_lib: str | None = Field(default=None, description="WordPress core PHPUnit library folder.")
    phpunit_polyfills: str | None = Field(default=None, description="Yoast PHPUnit Polyfills folder.")
    url: str = Field(default="/", description="Front-end page to probe after the patch.")
    bench: list[str] = Field(
        default_factory=list,
        description="Paths to time before and after the patch (an advisory regression check, docs/bench.md).",
    )
    bench_count: int = Field(default=5, ge=1, le=200, description="Timed requests per bench path and side.")
    artifacts: str | None = Field(default=None, description="Folder that receives the bundle.")


class FlowResult(BaseModel):
    """A flow's own JSON document (as its CLI command prints it with ``--json``) and where its bundle landed."""

    document: dict[str, Any] = Field(description="The command's --json document.")
    success: bool
    bundle: BundleRef | None = Field(
        default=None, description="Where the bundle landed (none for a batch: each item's bundle is in its result)."
    )


class RecipeRunInput(ToolInput):
    """``recipe_run``: a workspace recipe (wp-codebox/workspace-recipe/v1) in a fresh sandbox."""

    recipe: str = Field(description="The recipe JSON file (its relative sources resolve against its folder).")
    artifacts: str | None = Field(default=None, description="Folder that receives the bundle.")


class EpisodeRunInput(ToolInput):
    """``episode_run``: an episode plan (codebox/episode-plan/v1) in one sandbox (docs/episodes.md)."""

    plan: str = Field(description="The episode plan JSON file (its relative paths resolve against its folder).")
    restore: str | None = Field(
        default=None, description="A snapshot document to start from (overrides the plan's restore)."
    )
    artifacts: str | None = Field(default=None, description="Folder that receives the bundle.")


class BatchInput(ToolInput):
    """``batch``: a batch file (JSON Lines) on Ray, each item in its own sandbox (docs/scale-out.md)."""

    file: str = Field(description='The batch file: JSON Lines, one item per line ({"kind": ..., ...}).')
    concurrency: int | None = Field(
        default=None, ge=1, description="Items in flight at once (default: what the Ray cluster's CPUs hold)."
    )
    timeout: str | None = Field(default=None, description="Per-item time limit. " + DURATION_DESCRIPTION)
    retries: int = Field(default=1, ge=0, description="Retries of an item after an infrastructure failure.")
    ray_address: str | None = Field(
        default=None, description="A running Ray cluster (default: a private local Ray instance, loopback only)."
    )
    artifacts: str | None = Field(default=None, description="Folder that receives the bundles.")
