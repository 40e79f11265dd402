"""CLI for recipes and schemas: ``schema``, ``recipe validate``, ``recipe-run``, ``validate-blueprint``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from codebox_tui.cli.output import BACKEND_HELP, JsonOption, counted, emit_json, exit_with, show
from codebox_tui.cli.preview import (
    PREVIEW_HOLD_HELP,
    PREVIEW_PORT_HELP,
    PREVIEW_PUBLIC_URL_HELP,
    announce_held,
    apply_preview_options,
    sigterm_interrupts,
)
from codebox_tui.contracts.recipe import RECIPE_SCHEMA, recipe_json_schema
from codebox_tui.contracts.schemas import generate_json_schema, schema_names
from codebox_tui.errors import BadInputError, ExitCode
from codebox_tui.progress_report import StderrProgress
from codebox_tui.recipes.blueprint import load_blueprint_document, validate_blueprint_file
from codebox_tui.recipes.evaluate_patch import check_bench_paths, evaluate_patch
from codebox_tui.recipes.evaluate_range import check_evaluation_inputs, evaluate_git_range
from codebox_tui.recipes.plan import dry_run as make_plan
from codebox_tui.recipes.run import run_recipe
from codebox_tui.recipes.validate import all_steps, validate_recipe_document, validate_recipe_file
from codebox_tui.settings import get_settings
from codebox_tui.textsafe import safe_text
from codebox_tui.versions import DEFAULT_PHP_VERSION, DEFAULT_WP_VERSION

JSON_SCHEMA_ENVELOPE = "wp-codebox/json-schema/v1"
BLUEPRINT_VALIDATION = "wp-codebox/blueprint-validation/v1"


def _schema_registry() -> dict[str, Any]:
    """Short schema name (``recipe``, ``runtime-policy``…) → (schema id, generator), from the one registry."""
    registry: dict[str, Any] = {"recipe": (RECIPE_SCHEMA, recipe_json_schema)}
    for schema_id in schema_names():
        short = schema_id.split("/")[1] if schema_id.count("/") >= 2 else schema_id
        if schema_id != RECIPE_SCHEMA:
            registry.setdefault(short, (schema_id, lambda n=schema_id: generate_json_schema(n)))
    return registry


QuietOption = typer.Option(False, "--quiet", "-q", help="No progress lines on stderr.")


def _reporter(label: str, quiet: bool, steps_total: int | None = None) -> Any:
    return StderrProgress(label, quiet=quiet, steps_total=steps_total)


def _print_issues(issues: list[dict[str, str]]) -> None:
    for issue in issues:
        show(f"  {issue['path']}: {issue['message']} [{issue['code']}]", err=True)


def schema_command(
    name: str = typer.Argument(..., help="Schema name, e.g. recipe (or a full wp-codebox/... id)"),
    json_out: bool = JsonOption,
) -> None:
    """Print a generated JSON Schema (Draft 2020-12)."""
    registry = _schema_registry()
    entry = registry.get(name) or next((v for v in registry.values() if v[0] == name), None)
    if entry is None:
        raise BadInputError(
            f"Unknown schema {name!r}; known: {', '.join(sorted(registry))}", code="unknown-schema", field="NAME"
        )
    schema_id, generate = entry
    doc = generate()
    if json_out:
        emit_json({"schema": JSON_SCHEMA_ENVELOPE, "id": schema_id, "jsonSchema": doc})
    else:
        show(json.dumps(doc, indent=2))


recipe_app = typer.Typer(help="Workspace recipes (wp-codebox/workspace-recipe/v1).", no_args_is_help=True)


@recipe_app.command("validate")
def recipe_validate(
    file: Path = typer.Argument(..., help="Recipe JSON file"),
    json_out: bool = JsonOption,
) -> None:
    """Check a recipe and report every problem with its JSON path. Boots nothing."""
    result = validate_recipe_file(file)
    doc = result.to_dict()
    if json_out:
        emit_json(doc)
    elif result.valid:
        s = doc["summary"]
        show(f"{file}: valid ({s['steps']} steps, {s['mounts']} mounts, {s['workspaces']} workspaces)")
    else:
        show(f"{file}: invalid recipe ({counted(len(result.issues), 'problem')})", err=True)
        _print_issues(doc["issues"])
    exit_with(ExitCode.OK if result.valid else ExitCode.BAD_INPUT)


def recipe_run(
    file: Path = typer.Argument(..., help="Recipe JSON file"),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the resolved plan; boot nothing."),
    artifacts_dir: Path | None = typer.Option(None, "--artifacts-dir", "--artifacts", help="Where the bundle goes."),
    backend: str | None = typer.Option(
        None, "--backend", help=BACKEND_HELP + " Overrides the recipe's runtime.backend."
    ),
    json_out: bool = JsonOption,
    quiet: bool = QuietOption,
    preview_hold: str | None = typer.Option(None, "--preview-hold", "--preview-hold-seconds", help=PREVIEW_HOLD_HELP),
    preview_port: int | None = typer.Option(None, "--preview-port", help=PREVIEW_PORT_HELP),
    preview_public_url: str | None = typer.Option(None, "--preview-public-url", help=PREVIEW_PUBLIC_URL_HELP),
) -> None:
    """Run a recipe in a fresh sandbox and produce one bundle (or print the plan with --dry-run)."""
    validation = validate_recipe_file(file)
    if dry_run or not validation.valid:
        doc = make_plan(validation, file.resolve().parent, backend=backend)
        if json_out:
            emit_json(doc)
        elif validation.valid:
            show(json.dumps(doc["plan"], indent=2))
        else:
            show(f"{file}: invalid recipe ({counted(len(validation.issues), 'problem')}); nothing was run", err=True)
            _print_issues(doc["validation"]["issues"])
        exit_with(ExitCode.OK if validation.valid else ExitCode.BAD_INPUT)
    total = len(all_steps(validation.recipe)) if validation.recipe else None
    reporter = _reporter("recipe-run", quiet, steps_total=total)
    reporter.phase("start", str(file))
    # the run lifecycle records the run in the review inbox and reports it to the reporter
    with sigterm_interrupts():  # SIGTERM releases a hold; the bundle is still captured
        outcome = run_recipe(
            validation,
            file.resolve().parent,
            artifacts_dir=artifacts_dir,
            progress=reporter,
            backend=backend,
            preview=lambda request: apply_preview_options(request, preview_hold, preview_port, preview_public_url),
            on_held=lambda run: announce_held(run, preview_hold or f"{run.request.hold_s:g}s"),
        )
    if json_out:
        emit_json(outcome)
    else:
        _print_recipe_outcome(outcome)
    exit_with(ExitCode.OK if outcome.get("success") else ExitCode.FAILED)


def _boot_blueprint(file: Path, backend: str | None, artifacts_dir: Path | None, quiet: bool) -> dict[str, Any]:
    """``validate-blueprint --boot``: the blueprint as the set-up of a one-step recipe (its steps applied the
    way ``recipe-run`` applies ``runtime.blueprint``, then the site's state captured), run through the one run
    lifecycle, so the bundle is sealed and in the review inbox like any run's."""
    recipe = {
        "schema": RECIPE_SCHEMA,
        "metadata": {"title": f"Blueprint {file.name}"},
        "runtime": {"blueprint": load_blueprint_document(file)},
        "workflow": {"steps": [{"command": "wordpress.capture-state-bundle", "args": ["sections=summary,options"]}]},
    }
    validation = validate_recipe_document(recipe, base_dir=file.resolve().parent, recipe_path=str(file))
    if not validation.valid:  # the shape check passed; what the recipe layer refuses is still bad input
        raise BadInputError(
            "; ".join(f"{i.path}: {i.message}" for i in validation.issues), code="invalid-blueprint", field=str(file)
        )
    reporter = _reporter("validate-blueprint", quiet, steps_total=1)
    reporter.phase("start", str(file))
    outcome = run_recipe(
        validation, file.resolve().parent, artifacts_dir=artifacts_dir, progress=reporter, backend=backend
    )
    phase = next((ph for ph in outcome.get("phaseEvidence") or [] if ph.get("name") == "run_blueprint_steps"), None)
    failures = [f["message"] for f in outcome.get("failures") or []]
    return {
        "success": bool(outcome.get("success")),
        "runtimeId": outcome.get("runtimeId"),
        "bundleDir": outcome.get("bundleDir"),
        "bundleId": outcome.get("bundleId"),
        "blueprintPhase": phase,
        "error": "; ".join(failures) or None,
    }


def validate_blueprint(
    file: Path = typer.Argument(..., help="Playground blueprint JSON file"),
    boot: bool = typer.Option(
        False,
        "--boot",
        help="When its shape is valid, also apply it in a fresh sandbox "
        "and capture a bundle (recorded in the review inbox)",
    ),
    backend: str | None = typer.Option(None, "--backend", help=BACKEND_HELP + " With --boot only."),
    artifacts_dir: Path | None = typer.Option(
        None, "--artifacts-dir", "--artifacts", help="Where the --boot bundle goes."
    ),
    json_out: bool = JsonOption,
    quiet: bool = QuietOption,
) -> None:
    """Check a raw Playground blueprint's shape; --boot also applies it in a sandbox."""
    issues = validate_blueprint_file(file)
    doc: dict[str, Any] = {
        "schema": BLUEPRINT_VALIDATION,
        "success": not issues,
        "valid": not issues,
        "blueprintPath": str(file),
        "issues": issues,
    }
    if boot and not issues:  # an invalid blueprint boots nothing
        doc["boot"] = _boot_blueprint(file, backend, artifacts_dir, quiet)
        doc["success"] = doc["boot"]["success"]
    if json_out:
        emit_json(doc)
    elif issues:
        show(f"{file}: invalid blueprint ({counted(len(issues), 'problem')})", err=True)
        _print_issues(issues)
    else:
        show(f"{file}: valid blueprint")
        if "boot" in doc:
            booted = doc["boot"]
            show(
                f"boot: {'applied' if booted['success'] else 'failed'}"
                + (f" ({safe_text(str(booted['error']))})" if booted.get("error") else "")
                + (f"; bundle {booted['bundleDir']}" if booted.get("bundleDir") else "")
            )
    exit_with(ExitCode.BAD_INPUT if issues else ExitCode.OK if doc["success"] else ExitCode.FAILED)


def evaluate_patch_command(
    plugin: Path = typer.Option(..., "--plugin", help="Plugin directory (never modified)"),
    patch: Path | None = typer.Option(None, "--patch", help="Contributor's patch (git diff / unified diff)"),
    git_range: str | None = typer.Option(
        None, "--git", help="BASE..HEAD (or one commit) of the plugin's own git repository, instead of --patch"
    ),
    slug: str | None = typer.Option(None, "--slug", help="Plugin slug (default: the folder's name)"),
    tests_path: list[str] = typer.Option(
        [],
        "--tests-path",
        help="Glob of the patch's paths that are tests (repeatable; replaces the default rule, docs/evaluate-patch.md)",
    ),
    test: list[str] = typer.Option([], "--test", help="Plugin-relative test file (repeatable); default: suite"),
    phpunit_xml: str | None = typer.Option(
        None,
        "--phpunit-xml",
        help="Plugin-relative PHPUnit configuration (default: phpunit.xml, then phpunit.xml.dist)",
    ),
    test_filter: str | None = typer.Option(None, "--filter", help="PHPUnit --filter pattern"),
    bootstrap: str | None = typer.Option(
        None, "--bootstrap", help="Plugin-relative PHPUnit bootstrap instead of the configured one"
    ),
    wordpress_mode: str = typer.Option(
        "auto",
        "--wordpress",
        help="auto | tests-lib (WP_UnitTestCase with the WordPress core test "
        "library) | global (WordPress loaded before PHPUnit) | none",
    ),
    env: list[str] = typer.Option([], "--env", help="NAME=VALUE for PHP and PHPUnit (repeatable)"),
    wp: str = typer.Option(DEFAULT_WP_VERSION, "--wp", help="WordPress build"),
    php: str | None = typer.Option(
        None, "--php", help=f"PHP version (default: {DEFAULT_PHP_VERSION} on playground, the host's on native)"
    ),
    backend: str | None = typer.Option(None, "--backend", help=BACKEND_HELP),
    wp_tests_lib: Path | None = typer.Option(
        None,
        "--wp-tests-lib",
        help="WordPress core PHPUnit library (default: $WP_TESTS_DIR, "
        "vendor/wp-phpunit/wp-phpunit, /tmp/wordpress-tests-lib)",
    ),
    phpunit_polyfills: Path | None = typer.Option(
        None,
        "--phpunit-polyfills",
        help="Yoast PHPUnit Polyfills (default: $WP_TESTS_PHPUNIT_POLYFILLS_PATH, vendor/yoast/phpunit-polyfills)",
    ),
    url: str = typer.Option("/", "--url", help="Front-end page to probe after the patch"),
    bench: list[str] = typer.Option(
        [],
        "--bench",
        help="A path to time before and after the patch (repeatable; "
        "a warning when it got slower, never a verdict change; "
        "docs/bench.md)",
    ),
    bench_count: int = typer.Option(5, "--bench-count", help="Timed requests per --bench path and side (1-200)"),
    artifacts_dir: Path | None = typer.Option(None, "--artifacts-dir", "--artifacts", help="Where the bundle goes."),
    json_out: bool = JsonOption,
    quiet: bool = QuietOption,
) -> None:
    """Apply a patch (or a git range) to a copy of a plugin in a sandbox, run its tests before and after, probe
    the site. When the patch brings tests, they run on the old code too: fail before, pass after is the proof.

    Exit 0 only for the verdicts improvement and neutral (tests ran on both sides, front end clean);
    regression, untested and plugin-broken exit 1."""
    if wordpress_mode not in ("auto", "tests-lib", "global", "none"):
        raise BadInputError(
            f"--wordpress must be auto, tests-lib, global or none, not {wordpress_mode!r}",
            code="invalid-arg",
            field="--wordpress",
        )
    runtime_env: dict[str, str] = {}
    for item in env:
        name, sep, value = item.partition("=")
        if not sep:
            raise BadInputError(f"--env {item!r} must look like NAME=VALUE", code="invalid-runtime-env", field="--env")
        runtime_env[name] = value
    check_evaluation_inputs(plugin, patch, git_range, wp=wp, php=php, backend=backend)  # nothing boots on bad input
    check_bench_paths(bench, bench_count)
    root = artifacts_dir or get_settings().artifacts_dir
    reporter = _reporter("evaluate-patch", quiet)
    reporter.phase("start", f"{plugin} + {patch.name if patch else git_range}")
    options: dict[str, Any] = {
        "artifacts_dir": root,
        "tests": list(test) or None,
        "probe_url": url,
        "wp": wp,
        "php": php,
        "backend": backend,
        "phpunit_xml": phpunit_xml,
        "test_filter": test_filter,
        "env": runtime_env,
        "wp_tests_lib": wp_tests_lib,
        "phpunit_polyfills": phpunit_polyfills,
        "bootstrap": bootstrap,
        "wordpress_mode": wordpress_mode,
        "tests_paths": list(tests_path) or None,
        "slug": slug,
        "bench_paths": list(bench) or None,
        "bench_count": bench_count,
        "progress": reporter,
    }
    if git_range is not None:
        outcome = evaluate_git_range(plugin, git_range, **options)
    else:
        assert patch is not None
        outcome = evaluate_patch(plugin, patch, **options)
    if json_out:
        emit_json(outcome)
    else:
        _print_evaluation(outcome)
    exit_with(ExitCode.OK if outcome["success"] else ExitCode.FAILED)


def register(app: typer.Typer) -> None:
    """Add this area's commands to ``app``."""
    app.command("schema")(schema_command)
    app.command("recipe-run")(recipe_run)
    app.command("validate-blueprint")(validate_blueprint)
    app.command("evaluate-patch")(evaluate_patch_command)
    app.add_typer(recipe_app, name="recipe")


def _print_recipe_outcome(outcome: dict[str, Any]) -> None:
    """The status, every probe, every failure (a probe's with its expected and actual JSON) and every
    warning (advisory / allowFailure failures, which do not fail the run): bundle/checks.py."""
    warnings, failures = outcome.get("warnings") or [], outcome.get("failures") or []
    show(
        f"status: {outcome.get('status')}"
        + (f" with {len(warnings)} warning{'s' if len(warnings) != 1 else ''}" if warnings else "")
    )
    for probe in outcome.get("probes") or []:
        soft = " (allowFailure: a warning)" if probe.get("allowFailure") and probe.get("status") != "passed" else ""
        show(f"  probe {safe_text(probe.get('name'))}: {safe_text(probe.get('status'))}{soft}")
    if outcome.get("status") == "reproduced":
        show("  the bug is reproduced: every probe describing it passed")
    elif outcome.get("status") == "not-reproduced":
        show("  the bug did not show: a probe describing it did not pass")
    for failure in failures:
        show(
            f"  {'NOT SEEN' if outcome.get('status') == 'not-reproduced' else 'FAILED'}  "
            f"{failure['what']}: {failure['message']}"
        )
    for warning in warnings:
        show(f"  warning {warning['what']}: {warning['message']}")
    show(f"bundle: {outcome.get('bundleDir')}")


def _print_evaluation(outcome: dict[str, Any]) -> None:
    """The verdict, per-side totals (never summed) and each failure with its assertion message."""
    t = outcome["tests"]
    show(
        f"patch {'applied' if outcome['applied'] else 'FAILED to apply'}; verdict: {t['verdict']}"
        + (f" ({t['reason']})" if t.get("reason") else "")
    )
    show(
        f"  fixed {len(t['fixed'])}, broken {len(t['broken'])}, still failing {len(t['stillFailing'])}, "
        f"added {len(t['added'])}, removed {len(t['removed'])}"
    )
    risks = outcome.get("siteStateRisks") or []
    if risks:  # the verdict is not clean: the site's state is unknown or a control file changed
        show(f"  NOT CLEAN: site-state risk {', '.join(safe_text(r) for r in risks)} (see the review's Site tab)")
        for detail in outcome.get("siteStateRiskDetails") or []:
            show(f"    {safe_text(detail.get('code'))}: {safe_text(detail.get('message'))}")
    split = outcome.get("split") or {}
    if split.get("testsRunBefore"):
        show(f"  the patch's tests ({', '.join(safe_text(f) for f in split['testFiles'])}) ran on the old code too")
    for name in t.get("provedBy") or []:
        show(f"  proved by {safe_text(name)}: failed before the fix, passes after it")
    for name in t["broken"]:
        show(f"  regression {safe_text(name)}: passed before the patch, fails after it")
    for side in ("before", "after"):
        counts = t.get(side)
        if counts and counts.get("tests"):
            show(
                f"  {side:<6} {counts['passed']}/{counts['tests']} passed, {counts['failed']} failed, "
                f"{counts['skipped']} skipped"
            )
        else:
            show(f"  {side:<6} no tests ran")
        for failure in outcome.get("failures", {}).get(side, []):
            show(f"    ✘ {failure['test']}: {failure['message']}")
    front = (outcome.get("probe") or {}).get("frontEnd") or {}
    show(f"front end {front.get('url', '/')}: {front.get('status', 'not probed')}")
    for problem in front.get("problems", []):
        show(f"  {problem}")
    bench = outcome.get("bench")
    if bench:  # advisory (docs/bench.md): shown, never part of the verdict
        for entry in bench.get("paths", []):
            before, after, ratio = entry.get("beforeMedianMs"), entry.get("afterMedianMs"), entry.get("ratio")
            measured = before is not None and after is not None and ratio is not None
            show(
                f"bench {safe_text(entry.get('path'))}: median "
                + (
                    f"{before:.1f} ms before, {after:.1f} ms after (x{ratio:.2f})"
                    if measured
                    else "not measured on both sides"
                )
            )
        for warning in bench.get("warnings", []):
            show(f"  warning: {safe_text(warning)}")
    show(f"bundle: {outcome['bundleDir']}")
