"""The runtime command catalog: every command id a sandbox understands, its arguments, policy needs and
the Python function that runs it.

:func:`handler_for` maps a command id to its handler, importing the handler's module then (not with the
catalog). A handler takes the run as a :class:`~codebox_tui.runtime.context.CommandContext` and returns a
:class:`~codebox_tui.runtime.outcome.CommandOutcome`, so neither this module nor a handler imports the session
that imports them. ``codebox commands --json`` prints the catalog without booting anything; its ``handler``
field names the function as ``module:function``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from codebox_tui.contracts.runtime import CommandArg, CommandCatalog, CommandSpec
from codebox_tui.errors import BadInputError
from codebox_tui.runtime.bench_args import MAX_CONCURRENCY, MAX_COUNT, MAX_PATHS, MAX_WARMUP, PATH_SEPARATOR
from codebox_tui.runtime.context import CommandContext
from codebox_tui.runtime.core_checkout import CORE_TESTS_CHOICES
from codebox_tui.runtime.outcome import CommandOutcome

# what every handler is: the run as a CommandContext (runtime/context.py), the parsed args, the timeout
Handler = Callable[[CommandContext, dict[str, str], float], CommandOutcome]
POLICY_ONLY = "policy-only"  # a capability a policy grants; not a command that runs

A = CommandArg

# The handlers' modules, loaded when one of their commands runs (handler_for), not with the catalog: checking a
# request or listing the commands loads none of them, and a run loads its own command's alone (a `run-php` loads
# no browser, PHPUnit or bench machinery: tests/unit/test_cli_lazy.py; docs/performance.md, "Eighteenth session").
COMMANDS = "codebox_tui.runtime.commands"
PHPUNIT = "codebox_tui.runtime.phpunit"
CORE_PHPUNIT = "codebox_tui.runtime.core_phpunit"
BROWSER = "codebox_tui.runtime.browser_commands"
BENCH = "codebox_tui.runtime.bench"
HANDLER_MODULES = (COMMANDS, PHPUNIT, CORE_PHPUNIT, BROWSER, BENCH)


def _ref(module: str, function: str) -> str:
    """A handler's name in the catalog's wire form (``module:function``)."""
    return f"{module}:{function}"


# The scoping arguments of a snapshot or checkpoint (docs/site-state.md, "Snapshots").
SNAPSHOT_SCOPE_ARGS = [
    A(name="snapshot-include-wp-content", description="Only these wp-content paths (comma list of globs)"),
    A(name="snapshot-exclude-wp-content", description="Leave out these wp-content paths (comma list of globs)"),
    A(name="snapshot-database-tables", description="Only these tables (comma list of globs)"),
    A(name="snapshot-exclude-database-tables", description="Leave out these tables (comma list of globs)"),
    A(name="snapshot-option-names", description="Only these option rows (comma list, '*' wildcard)"),
    A(name="snapshot-post-types", description="Only the posts of these types (comma list)"),
]

_COMMANDS: list[CommandSpec] = [
    CommandSpec(
        id="inspect-mounted-inputs",
        description="List each mount's target, host source and top-level entries as the sandbox sees them.",
        outputShape="json",
        policyRequirement="inspect-mounted-inputs",
        handler=_ref(COMMANDS, "inspect_mounted_inputs"),
    ),
    CommandSpec(
        id="wordpress.run-php",
        description="Run PHP inside the sandbox, after loading WordPress unless bootstrap=none.",
        acceptedArgs=[
            A(name="code", description="PHP source; '<?php' is prepended when missing"),
            A(
                name="code-file",
                description="Host path of a PHP file (relative to the current directory)",
                format="path",
            ),
            A(
                name="bootstrap",
                description="'wordpress' (default) loads wp-load.php; 'none' runs bare PHP",
                format="enum:wordpress,none",
            ),
        ],
        outputShape="raw-stdout",
        policyRequirement="wordpress.run-php",
        handler=_ref(COMMANDS, "run_php"),
        metadata={"requiresOneOf": ["code", "code-file"]},
    ),
    CommandSpec(
        id="wordpress.wp-cli",
        description="Run a WP-CLI command (needs a wp-cli.phar: --wp-cli-phar, CODEBOX_WP_CLI_PHAR or a wp on PATH).",
        acceptedArgs=[
            A(name="command", description="WP-CLI command line, with or without leading 'wp'", required=True)
        ],
        outputShape="raw-stdout",
        policyRequirement="wordpress.wp-cli",
        handler=_ref(COMMANDS, "wp_cli"),
    ),
    CommandSpec(
        id="wordpress.ability",
        description="Execute a registered WordPress Ability (Abilities API) with JSON input.",
        acceptedArgs=[
            A(name="name", description="Ability name, e.g. 'my-plugin/do-thing'", required=True),
            A(name="input", description="JSON input passed to the ability", format="json"),
        ],
        outputShape="wp-codebox/wordpress-ability-result/v1",
        policyRequirement="wordpress.ability",
        handler=_ref(COMMANDS, "ability"),
    ),
    CommandSpec(
        id="wordpress.phpunit",
        description="Run a mounted plugin's PHPUnit suite inside the sandbox and record JUnit results.",
        acceptedArgs=[
            A(name="plugin-slug", description="Plugin directory under wp-content/plugins", required=True),
            A(
                name="load-as",
                description="plugin (default): the folder is wp-content/plugins/<slug>; mu-plugin: "
                "a single-file must-use plugin's folder, wp-content/mu-plugins/codebox-runtime/<slug>",
                format="enum:plugin,mu-plugin",
            ),
            A(name="test-file", description="Run only this test file (plugin-relative)"),
            A(name="phpunit-xml", description="PHPUnit configuration file (plugin-relative)"),
            A(name="filter", description="PHPUnit --filter pattern"),
            A(name="bootstrap", description="PHPUnit bootstrap file (plugin-relative), instead of the configured one"),
            A(
                name="wordpress",
                description="auto (default): tests-lib when the bootstrap loads the WordPress core "
                "test library (WP_UnitTestCase), else global; global: load WordPress in global scope before "
                "PHPUnit; tests-lib: the core test library with the sandbox's SQLite test site; none: the "
                "suite's bootstrap loads WordPress itself",
                format="enum:auto,global,tests-lib,none",
            ),
        ],
        outputShape="wp-codebox/test-results/v1",
        policyRequirement="wordpress.phpunit",
        requiresPolicyCommands=["wordpress.run-php"],
        handler=_ref(PHPUNIT, "phpunit"),
    ),
    CommandSpec(
        id="wordpress.core-phpunit",
        description="Run WordPress core's own PHPUnit tests from a checkout on this machine (its tests/phpunit "
        "mounted read-only) against the sandbox's WordPress, and record JUnit results as wordpress.phpunit does.",
        acceptedArgs=[
            A(
                name="core-root",
                description="Host folder of a WordPress core checkout (wordpress-develop, or any "
                "folder with its tests/phpunit layout: includes/ of the core test library and tests/)",
                required=True,
                format="directory",
            ),
            A(name="test-file", description="Run only this file (checkout-relative, under tests/phpunit/)"),
            A(name="filter", description="PHPUnit --filter pattern"),
            A(name="group", description="PHPUnit --group: only tests of these groups (comma list)"),
            A(name="exclude-group", description="PHPUnit --exclude-group: leave out these groups (comma list)"),
            A(
                name="core-tests",
                description="Set WP_RUN_CORE_TESTS as core's own configuration does: auto "
                "(default: when the checkout has tests/phpunit/data), on, off",
                format="enum:" + ",".join(CORE_TESTS_CHOICES),
            ),
        ],
        outputShape="wp-codebox/test-results/v1",
        policyRequirement="wordpress.core-phpunit",
        requiresPolicyCommands=["wordpress.run-php"],
        handler=_ref(CORE_PHPUNIT, "core_phpunit"),
    ),
    CommandSpec(
        id="wordpress.browser-probe",
        description="Load a page of the live preview in Chromium and capture evidence.",
        acceptedArgs=[
            A(name="url", description="Path or URL on the sandbox preview", required=True),
            A(
                name="wait-for",
                description="domcontentloaded|load|networkidle|selector:<css>, or a duration "
                "(500ms) to wait after load",
            ),
            A(name="viewport", description="WIDTHxHEIGHT", format="viewport"),
            A(
                name="capture",
                description="Comma list of console,errors,html,network,performance,screenshot "
                "(the default) and memory,checkpoints (only when named)",
                format="comma-enum:console,errors,html,network,performance,screenshot,memory,checkpoints",
            ),
            A(
                name="checkpoint",
                description="A named moment after the page loads: NAME, NAME@selector:<css> (once "
                "it is visible) or NAME@<duration> (after that long), recorded in checkpoints.jsonl with its own "
                "screenshot, metrics and, with capture=memory, heap (repeatable, in order)",
                repeatable=True,
            ),
            A(name="timeout", description="Per-probe timeout, e.g. 30s", format="duration"),
        ],
        outputShape="wp-codebox/browser-probe-result/v1",
        policyRequirement="wordpress.browser-probe",
        handler=_ref(BROWSER, "browser_probe"),
    ),
    CommandSpec(
        id="wordpress.browser-actions",
        description="Drive the live preview through scripted steps (navigate, click, hover, fill, type, press, "
        "select, drag, waitFor, expect, screenshot, evaluate).",
        acceptedArgs=[
            A(name="url", description="Start page on the sandbox preview"),
            A(name="steps-json", description="JSON array of steps, inline or @path", required=True, format="json"),
            A(name="step-timeout", description="Per-step timeout", format="duration"),
            A(name="timeout", description="Total timeout", format="duration"),
            A(
                name="capture",
                description="Comma list of console,errors,html,network,screenshot",
                format="comma-enum:console,errors,html,network,screenshot",
            ),
        ],
        outputShape="wp-codebox/browser-actions-result/v1",
        policyRequirement="wordpress.browser-actions",
        handler=_ref(BROWSER, "browser_actions"),
    ),
    CommandSpec(
        id="wordpress.bench",
        description="Time requests against paths of the sandbox: latency min/median/p95/max and PHP's peak "
        "memory per path, kept as files/bench.json (docs/bench.md). Needs page requests: Playground only so far.",
        acceptedArgs=[
            A(
                name="path",
                description=f"A path of the site, e.g. / or /wp-json/ (repeatable, at most {MAX_PATHS}; default /)",
                repeatable=True,
            ),
            A(name="count", description=f"Timed requests per path, 1-{MAX_COUNT} (default 10)"),
            A(
                name="warmup",
                description=f"Untimed requests per path first, 0-{MAX_WARMUP} (default 2)",
            ),
            A(
                name="concurrency",
                description=f"Timed requests in flight at once, 1-{MAX_CONCURRENCY} (default 1)",
            ),
            A(name="label", description="A name kept in the document (evaluate-patch: before, after)"),
        ],
        outputShape="codebox/bench/v1",
        policyRequirement="wordpress.bench",
        handler=_ref(BENCH, "bench"),
    ),
    CommandSpec(
        id="wordpress.capture-state-bundle",
        description="Snapshot the site (database tables with rows, wp-content files with hashes; read-only "
        "mounts excluded) and its wordpress-state export into the run's evidence.",
        acceptedArgs=[
            A(
                name="sections",
                description="wordpress-state sections, comma list (default summary): summary, "
                "posts, terms, menus, templates, media, options, users, rest-routes, abilities",
            ),
            A(
                name="redaction",
                description="'safe' (default): no password hashes, emails, keys or salts",
                format="enum:safe,none",
            ),
            *SNAPSHOT_SCOPE_ARGS,
        ],
        outputShape="wp-codebox/wordpress-runtime-snapshot/v1",
        policyRequirement="wordpress.capture-state-bundle",
        handler=_ref(COMMANDS, "capture_state_bundle"),
    ),
    CommandSpec(
        id="wp-codebox.checkpoint-create",
        description="Save the site's state inside the sandbox under a name (replaces a checkpoint of that name).",
        acceptedArgs=[
            A(name="name", description="Checkpoint name: letters, digits, '.', '_', '-'", required=True),
            A(name="metadata-json", description="JSON object kept with the checkpoint", format="json"),
            *SNAPSHOT_SCOPE_ARGS,
        ],
        outputShape="wp-codebox/runtime-checkpoint-result/v1",
        policyRequirement="wp-codebox.checkpoint-create",
        handler=_ref(COMMANDS, "checkpoint_create"),
    ),
    CommandSpec(
        id="wp-codebox.checkpoint-restore",
        description="Put the site back to a named checkpoint of this sandbox (database and wp-content files).",
        acceptedArgs=[A(name="name", description="Checkpoint name", required=True)],
        outputShape="wp-codebox/runtime-checkpoint-result/v1",
        policyRequirement="wp-codebox.checkpoint-restore",
        handler=_ref(COMMANDS, "checkpoint_restore"),
    ),
    CommandSpec(
        id="wp-codebox.checkpoint-list",
        description="List this sandbox's checkpoints.",
        outputShape="wp-codebox/runtime-checkpoint-result/v1",
        policyRequirement="wp-codebox.checkpoint-list",
        handler=_ref(COMMANDS, "checkpoint_list"),
    ),
    CommandSpec(
        id="wp-codebox.observe",
        description="One observation of the sandbox (docs/episodes.md): runtime-info, mounts, files, "
        "command-result, wordpress-state, http-response, runtime-events or runtime-logs, printed as its "
        "wp-codebox/runtime-episode-observation/v1 envelope.",
        acceptedArgs=[
            A(
                name="type",
                description="The observation type",
                required=True,
                format="enum:runtime-info,mounts,files,command-result,wordpress-state,http-response,runtime-events,"
                "runtime-logs",
            ),
            A(
                name="spec-json",
                description='The type\'s fields as a JSON object, e.g. {"paths": ["/wordpress/'
                'wp-config.php"]} or {"sections": ["options"]}',
                format="json",
            ),
        ],
        outputShape="wp-codebox/runtime-episode-observation/v1",
        policyRequirement="wp-codebox.observe",
        handler=_ref(COMMANDS, "observe"),
    ),
    CommandSpec(
        id="wordpress.browser-actions.evaluate",
        description="Capability only: allows 'evaluate' steps in wordpress.browser-actions.",
        outputShape="none",
        policyRequirement="wordpress.browser-actions.evaluate",
        recipe=False,
        handler=POLICY_ONLY,
    ),
]


def command_catalog() -> CommandCatalog:
    return CommandCatalog(commands=list(_COMMANDS))


def get_command(command_id: str) -> CommandSpec:
    for spec in _COMMANDS:
        if spec.id == command_id:
            return spec
    known = ", ".join(spec.id for spec in _COMMANDS)
    raise BadInputError(
        f"Unknown command {command_id!r}; known commands: {known}",
        code="unknown-command",
        field="command",
    )


def handler_for(command_id: str) -> Handler:
    """The function that runs ``command_id``, its module imported now (see :data:`HANDLER_MODULES`); a
    capability-only id is a clear error, not a handler."""
    spec = get_command(command_id)
    module, _, function = spec.handler.partition(":")
    if module not in HANDLER_MODULES:
        raise BadInputError(
            f"Command {command_id!r} is a policy capability and cannot be executed directly",
            code="policy-only-command",
            field="command",
        )
    handler: Handler = getattr(importlib.import_module(module), function)
    return handler


def parse_args(spec: CommandSpec, raw_args: list[str]) -> dict[str, str]:
    """Turn ``key=value`` strings into a dict, rejecting unknown and missing arguments."""
    accepted = {arg.name: arg for arg in spec.acceptedArgs}
    parsed: dict[str, str] = {}
    for index, raw in enumerate(raw_args):
        key, sep, value = raw.partition("=")
        if not sep or not key:
            raise BadInputError(
                f"Argument {raw!r} must look like key=value", code="invalid-arg", field=f"args[{index}]"
            )
        if key not in accepted:
            names = ", ".join(accepted) or "none"
            raise BadInputError(
                f"Command {spec.id} does not accept argument {key!r} (accepted: {names})",
                code="unknown-arg",
                field=f"args[{index}]",
            )
        if key in parsed and not accepted[key].repeatable:
            raise BadInputError(f"Argument {key!r} given twice", code="duplicate-arg", field=f"args[{index}]")
        # a repeated argument's values reach the handler one per line (values never hold a newline there)
        parsed[key] = f"{parsed[key]}{PATH_SEPARATOR}{value}" if key in parsed else value
    for arg in spec.acceptedArgs:
        if arg.required and arg.name not in parsed:
            raise BadInputError(
                f"Command {spec.id} needs argument {arg.name}=…: {arg.description}", code="missing-arg", field=arg.name
            )
    one_of = spec.metadata.get("requiresOneOf")
    if one_of and not any(name in parsed for name in one_of):
        raise BadInputError(
            f"Command {spec.id} needs one of: " + ", ".join(f"{n}=…" for n in one_of),
            code="missing-code",
            field=one_of[0],
        )
    return parsed
