"""``evaluate-patch``: apply a contributor's patch to a copy of a plugin inside a sandbox and judge it.

Flow: copy the plugin (with its ``vendor/``) to scratch (the original is never touched) → check the patch
applies → boot with the copy mounted read-write (baseline taken before boot) → activate (a fatal error or an
activation error is recorded) → PHPUnit *before* → apply the patch → PHPUnit *after* → front-end probe (PHP
errors recorded by a must-use plugin, the response, the plugin still active; the same request settles the load
check, recipes/front_end_probe.py) and browser evidence →
``files/evaluate-patch.json`` (verdict, test delta, failures with their messages, per-side totals) and
``files/contributor.patch`` → one bundle whose patch.diff is exactly what the patch changed. Verdicts and
exit codes are in the README ("Recipes, tests and browser evidence").
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codebox_tui.browser import driver as browser_driver
from codebox_tui.bundle import layout
from codebox_tui.bundle.hostgit import HostGit
from codebox_tui.contracts.bundle import TestSuite
from codebox_tui.contracts.evaluation import PATCH_EVALUATION_SCHEMA, PatchEvaluation
from codebox_tui.contracts.runtime import ExecutionResult, MountSpec, RuntimePolicy
from codebox_tui.errors import BadInputError, CodeboxError
from codebox_tui.lifecycle import CommandStep, OpenRun, ProgressListener, RunControl, RunRequest, RunService, Toolchain
from codebox_tui.lifecycle.site_state import unclean_details, unclean_risks
from codebox_tui.recipes.front_end_probe import front_end_probe, plain
from codebox_tui.recipes.patch_split import split_patch, test_rule
from codebox_tui.runtime.backend import validate_runtime_env
from codebox_tui.runtime.bench_args import PATH_SEPARATOR, bench_settings
from codebox_tui.runtime.mounts import mu_plugin_loader, plugin_target
from codebox_tui.runtime.php_literal import php_string
from codebox_tui.versions import DEFAULT_WP_VERSION

EVALUATION_SCHEMA = PATCH_EVALUATION_SCHEMA
COMMANDS = ["inspect-mounted-inputs", "wordpress.run-php", "wordpress.phpunit", "wordpress.browser-probe"]


SUCCESS_VERDICTS = ("improvement", "neutral")
TEST_TIMEOUT_S = 600.0  # each command of the evaluation (a plugin's whole PHPUnit suite)
BAD = ("failed", "error")
# the events that say which side's tests run and, when a side is done, its totals (the Live screen's progress)
TESTS_STARTED, TESTS_FINISHED = "evaluate.tests-started", "evaluate.tests-finished"


def test_delta(
    before: TestSuite | None,
    after: TestSuite | None,
    *,
    untested_reason: str | None = None,
    plugin_broken: str | None = None,
    patch_tests: bool = False,
) -> dict[str, Any]:
    """Per-case comparison (fixed, broken, still failing, added, removed) and a verdict that never claims
    more than was checked (README, "Recipes, tests and browser evidence"): ``plugin-broken`` when
    the plugin failed to load or activate on either side; ``untested`` when no test ran on either side;
    ``regression`` when a test that passed now fails, a new test fails, or the suite stopped running after
    the patch; ``improvement`` when a failing test passes; else ``neutral``.

    ``patch_tests``: the patch brought test files and the "before" side ran them against the old code
    (docs/evaluate-patch.md, "Fail before, pass after"): the tests that failed before and pass after are the
    proof (``provedBy``); when none did, the reason says the patch's tests do not detect the bug."""

    def statuses(suite: TestSuite | None) -> dict[str, str]:
        return {f"{c.classname or ''}::{c.name}": c.status for c in (suite.cases if suite else [])}

    b, a = statuses(before), statuses(after)
    delta: dict[str, list[str]] = {"fixed": [], "broken": [], "stillFailing": [], "added": [], "removed": []}
    for name in sorted(set(b) | set(a)):
        if name not in b:
            delta["added"].append(name)
        elif name not in a:
            delta["removed"].append(name)
        elif b[name] in BAD and a[name] == "passed":
            delta["fixed"].append(name)
        elif b[name] == "passed" and a[name] in BAD:
            delta["broken"].append(name)
        elif b[name] in BAD and a[name] in BAD:
            delta["stillFailing"].append(name)
    ran_before, ran_after = bool(b), bool(a)
    reason: str | None = None
    if plugin_broken:
        verdict, reason = "plugin-broken", plugin_broken
    elif not ran_before and not ran_after:
        verdict, reason = "untested", untested_reason or "no test ran before or after the patch"
    elif not ran_after:
        verdict = "regression"
        reason = "tests ran before the patch but none after it" + (f": {untested_reason}" if untested_reason else "")
    elif not ran_before:
        verdict = "untested"
        reason = "no test ran before the patch, so there is nothing to compare with" + (
            f": {untested_reason}" if untested_reason else ""
        )
    elif delta["broken"] or any(a[name] in BAD for name in delta["added"]):
        verdict = "regression"
    elif delta["fixed"]:
        verdict = "improvement"
    else:
        verdict = "neutral"
        if patch_tests:
            reason = (
                "the patch's tests pass on the old code too: they do not detect the bug the patch fixes"
                if not delta["stillFailing"]
                else "no test that failed before the patch passes after it"
            )
    proof = {"provedBy": list(delta["fixed"])} if patch_tests and verdict == "improvement" else {}
    return {
        "verdict": verdict,
        **({"reason": reason} if reason else {}),
        **delta,
        **proof,
        "before": _counts(before),
        "after": _counts(after),
    }


def _counts(suite: TestSuite | None) -> dict[str, Any] | None:
    if suite is None:
        return None
    return {
        "status": suite.status,
        "tests": suite.tests,
        "passed": suite.passed,
        "failed": suite.failed,
        "skipped": suite.skipped,
    }


def _git_apply(cwd: Path, patch: Path | bytes, check: bool) -> subprocess.CompletedProcess[str]:
    """``git apply`` of a patch file, or of patch bytes given on stdin (one part of a split patch)."""
    source = str(patch.resolve()) if isinstance(patch, Path) else "-"
    args = ["apply", "--whitespace=nowarn", *(["--check"] if check else []), source]
    done = HostGit(cwd).run(*args, input=patch if isinstance(patch, bytes) else None, timeout=60)
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
    )


ACTIVATE_PHP = r"""require_once ABSPATH . 'wp-admin/includes/plugin.php';
$slug = %(slug)s;
$files = array_keys( get_plugins( '/' . $slug ) );
if ( ! $files ) {
	echo json_encode( array( 'ok' => false, 'error' => "no PHP file with a Plugin Name header in $slug" ) );
	return;
}
$file = $slug . '/' . $files[0];
ob_start();
$result = is_plugin_active( $file ) ? null : activate_plugin( $file );
$output = ob_get_clean();
$error = is_wp_error( $result ) ? trim( $result->get_error_message() . ' ' . ( is_string( $result->get_error_data() )
	? $result->get_error_data() : '' ) ) : null;
echo json_encode( array( 'ok' => null === $error && is_plugin_active( $file ), 'file' => $file, 'error' => $error,
	'output' => $output ) );
"""

# A single-file must-use plugin "activates" when WordPress loads it: its file is among the included files.
MU_LOADED_PHP = r"""$file = %(file)s;
$loaded = in_array( $file, get_included_files(), true );
echo json_encode( array( 'ok' => $loaded, 'file' => $file,
	'error' => $loaded ? null : "WordPress did not load $file" ) );
"""


def _json_tail(text: str) -> dict[str, Any] | None:
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


def _fatal_text(text: str) -> str:
    """The fatal error line of PHP's output (tags and entities removed), else the output's end."""
    cleaned = plain(text)
    match = re.search(r"(?:PHP )?(?:Fatal error|Parse error|Uncaught )[^\n]*", cleaned)
    return (match.group(0) if match else cleaned.strip()[-1000:] or "no output").strip()[:1000]


def evaluate_patch(
    plugin_dir: Path,
    patch_file: Path,
    *,
    artifacts_dir: Path,
    tests: list[str] | None = None,
    probe_url: str = "/",
    wp: str = DEFAULT_WP_VERSION,
    php: str | None = None,
    backend: str | None = None,
    phpunit_xml: str | None = None,
    test_filter: str | None = None,
    env: dict[str, str] | None = None,
    wp_tests_lib: Path | None = None,
    phpunit_polyfills: Path | None = None,
    bootstrap: str | None = None,
    wordpress_mode: str = "auto",
    tests_paths: list[str] | None = None,
    slug: str | None = None,
    source: dict[str, str] | None = None,
    bench_paths: list[str] | None = None,
    bench_count: int = 5,
    progress: ProgressListener | None = None,
    control: RunControl | None = None,
    on_open: Callable[[OpenRun], None] | None = None,
) -> dict[str, Any]:
    """``backend``: ``playground`` or ``native`` (None: ``CODEBOX_BACKEND``); ``php`` None: the backend's
    default. ``source``: where the plugin and patch came from when not a folder and a patch file (``--git``: the
    repository, range and commits; recorded in the evaluation). ``bench_paths``: paths timed before and after
    the patch in the same sandbox, ``bench_count`` timed requests each (``--bench``, ``--bench-count``; an
    advisory regression check, docs/bench.md). ``control`` cancels the run; ``on_open`` is
    called with the open run before anything boots (the TUI's Live screen tails its events from there)."""
    plugin_dir = plugin_dir.resolve()
    # a single .php file is a must-use plugin: its folder is what the patch and the tests see, and only the file
    # is loaded (docs/evaluate-patch.md, "A single-file must-use plugin")
    mu_file = plugin_dir.name if plugin_dir.is_file() and plugin_dir.suffix == ".php" else None
    if mu_file:
        plugin_dir = plugin_dir.parent
    elif not plugin_dir.is_dir():
        raise BadInputError(
            f"--plugin {plugin_dir}: expected a plugin directory or a single-file must-use plugin (a .php file)",
            code="missing-source",
            field="--plugin",
        )
    if not patch_file.is_file():
        raise BadInputError(f"patch file not found: {patch_file}", code="missing-source", field="--patch")
    named = [("--phpunit-xml", phpunit_xml), ("--bootstrap", bootstrap), *[("--test", t) for t in tests or []]]
    for field, rel in named:
        if rel is not None and not (plugin_dir / rel).is_file():
            raise BadInputError(f"{field} {rel!r}: no such file in {plugin_dir}", code="missing-source", field=field)
    runtime_env = validate_runtime_env(env or {}, "--env")
    bench_args = check_bench_paths(bench_paths or [], bench_count)
    slug = check_slug(slug) if slug is not None else (Path(mu_file).stem if mu_file else plugin_dir.name)
    load_as = "mu-plugin" if mu_file else "plugin"
    target = plugin_target(load_as, slug)
    rule = test_rule(plugin_dir, tests_paths)
    split = split_patch(patch_file.read_bytes(), rule)
    scratch = Path(tempfile.mkdtemp(prefix="codebox-evaluate-"))
    try:
        copy = scratch / slug
        shutil.copytree(plugin_dir, copy, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        check = _git_apply(copy, patch_file, check=True)
        if check.returncode != 0:
            raise BadInputError(
                f"the patch does not apply to {plugin_dir.name}: {check.stderr.strip()[:500]}",
                code="patch-does-not-apply",
                field="--patch",
            )
        has_tests = (
            bool(tests)
            or bool(phpunit_xml)
            or any((copy / name).is_file() for name in ("phpunit.xml", "phpunit.xml.dist", "tests/bootstrap.php"))
        )
        untested_reason = (
            None
            if has_tests
            else (
                f"{slug} has no PHPUnit configuration (phpunit.xml, phpunit.xml.dist), no tests/bootstrap.php and no "
                "--test file" + (f" next to {mu_file}" if mu_file else "") + ": nothing to run"
            )
        )
        request = RunRequest(
            mounts=[
                MountSpec(
                    source=str(copy),
                    target=target,
                    mode="readwrite",
                    metadata={
                        "mountRole": "plugin",
                        "slug": slug,
                        "evaluation": "patched-copy",
                        **({"loadAs": load_as, "pluginFile": mu_file} if mu_file else {}),
                    },
                )
            ],
            policy=RuntimePolicy(commands=COMMANDS + (["wordpress.bench"] if bench_args else [])),
            wp=wp,
            php=php,
            backend=backend,
            env=runtime_env,
            artifacts_root=artifacts_dir,
            metadata={"flow": "evaluate-patch", "plugin": str(plugin_dir), "patch": str(patch_file.resolve())},
            tools=Toolchain(wp_tests_lib=wp_tests_lib, phpunit_polyfills=phpunit_polyfills),
            tool_commands=["wordpress.phpunit"] if has_tests else [],
            flow="evaluate-patch",
        )
        browser_driver.start_early()  # the front-end browser probe comes last: its driver starts during the tests
        with RunService().open(request, progress=progress, control=control) as handle:
            session = handle.session
            if on_open is not None:
                on_open(handle)
            steps: list[dict[str, Any]] = []
            reasons: list[str] = []

            def run(phase: str, command: str, args: list[str]) -> ExecutionResult | None:
                try:
                    result = handle.execute(CommandStep(command, args, TEST_TIMEOUT_S))
                except CodeboxError as exc:
                    steps.append({"phase": phase, "command": command, "error": exc.to_dict()})
                    if command == "wordpress.phpunit":
                        reasons.append(f"{phase}: {exc.message}")
                    return None
                steps.append({"phase": phase, "command": command, "exitCode": result.exitCode})
                value = result.result.json_ if result.result is not None else None
                if command == "wordpress.phpunit" and isinstance(value, dict) and value.get("reason"):
                    reasons.append(f"{phase}: {value['reason']}")
                return result

            def activate(phase: str) -> str | None:
                """None when the plugin is active (and loads), else the error shown. A must-use plugin is not
                activated: the check is that WordPress loaded its file."""
                code = (
                    MU_LOADED_PHP % {"file": php_string(f"{target}/{mu_file}")}
                    if mu_file
                    else ACTIVATE_PHP % {"slug": php_string(slug)}
                )
                result = run(phase, "wordpress.run-php", ["code=" + code])
                if result is None:
                    return "the activation check could not run"
                found = _json_tail(result.stdout)
                if found is None or result.exitCode != 0:
                    return f"{slug} fails to load ({phase}): " + _fatal_text(result.stdout + "\n" + result.stderr)
                if not found.get("ok"):
                    return (
                        f"{slug} fails to {'load' if mu_file else 'activate'} ({phase}): "
                        + (f"{found.get('error') or 'not active'}")
                        + (f"; output: {str(found.get('output'))[:500]}" if found.get("output") else "")
                    )
                return None

            if mu_file:  # Codebox's own setup step: the loader WordPress needs to load the file as a mu-plugin
                loader_path, loader = mu_plugin_loader(slug, mu_file)
                handle.site_state.write_setup_file(
                    loader_path, loader.encode("utf-8"), "evaluate-patch: the must-use plugin's loader", 30.0
                )
                session.emit("mu-plugin.loader-written", {"path": loader_path, "plugin": f"{target}/{mu_file}"})
                handle.site_state.rebase_files()  # the loader is declared input, not a file the run wrote
            broken_before = activate("before")
            # Codebox's own setup (activating the plugin, or the mu-plugin's loader) is not the patch's doing: the
            # site-state diff starts here, and the setup's changes are recorded as that step's
            # (docs/evaluate-patch.md, "Attribution")
            handle.site_state.rebase_summary(
                "evaluate-patch: load the mu-plugin" if mu_file else "evaluate-patch: activate the plugin"
            )
            tests_applied = subprocess.CompletedProcess[str]([], 0, "", "")
            if split.test_patch:
                # fail before, pass after: the patch's tests run against the old code first
                tests_applied = _git_apply(session.mount_dir(0), split.test_patch, check=False)
                steps.append(
                    {
                        "phase": "apply",
                        "command": "git apply (the patch's tests)",
                        "exitCode": tests_applied.returncode,
                        "stderr": tests_applied.stderr[-1000:],
                    }
                )
                session.emit("patch.tests-applied", {"files": split.test_files, "exitCode": tests_applied.returncode})
            test_args = (
                [[f"plugin-slug={slug}", f"test-file={t}"] for t in tests] if tests else [[f"plugin-slug={slug}"]]
            )
            common = [
                f"wordpress={wordpress_mode}",
                *([f"load-as={load_as}"] if mu_file else []),
                *([f"phpunit-xml={phpunit_xml}"] if phpunit_xml else []),
                *([f"filter={test_filter}"] if test_filter else []),
                *([f"bootstrap={bootstrap}"] if bootstrap else []),
            ]
            before: TestSuite | None = None
            after: TestSuite | None = None
            if has_tests:
                n0 = len(session.test_suites)
                session.emit(TESTS_STARTED, {"side": "before"})
                for args in test_args:
                    run("before", "wordpress.phpunit", args + common)
                before = _merge(session.test_suites[n0:], "before")
                session.emit(TESTS_FINISHED, _side_counts("before", before))
            bench_before = run("before", "wordpress.bench", [*bench_args, "label=before"]) if bench_args else None
            # into what the sandbox sees (the mount's private copy, README "Mounts"), after the "before" tests
            rest = split.code_patch if split.test_patch else patch_file
            applied = (
                _git_apply(session.mount_dir(0), rest, check=False)
                if rest
                else subprocess.CompletedProcess([], 0, "", "")
            )
            steps.append(
                {
                    "phase": "apply",
                    "command": "git apply (the patch's code)" if split.test_patch else "git apply",
                    "exitCode": applied.returncode,
                    "stderr": applied.stderr[-1000:],
                }
            )
            session.emit("patch.applied", {"patch": patch_file.name, "exitCode": applied.returncode})
            if has_tests:
                n1 = len(session.test_suites)
                session.emit(TESTS_STARTED, {"side": "after"})
                for args in test_args:
                    run("after", "wordpress.phpunit", args + common)
                after = _merge(session.test_suites[n1:], "after")
                session.emit(TESTS_FINISHED, _side_counts("after", after))
            if before is not None and after is not None:
                session.test_suites[:] = [before, after]
            # the front-end request also settles the "after" load check when it can (recipes/front_end_probe.py);
            # when it cannot, the full check runs and the page is probed again
            probed = front_end_probe(session, handle.site_state, slug, probe_url, target, mu_file)
            if probed.conclusive:
                broken_after = (
                    f"{slug} fails to load (after): {_fatal_text(probed.load_failure)}" if probed.load_failure else None
                )
                steps.append(
                    {
                        "phase": "after",
                        "command": "front-end probe (load check)",
                        "exitCode": 1 if probed.load_failure else 0,
                    }
                )
            else:
                broken_after = activate("after")
                probed = front_end_probe(session, handle.site_state, slug, probe_url, target, mu_file)
            front = probed.front
            bench_after = run("after", "wordpress.bench", [*bench_args, "label=after"]) if bench_args else None
            bench_check = compare_benches(bench_before, bench_after) if bench_args else None
            for warning in (bench_check or {}).get("warnings", []):
                session.emit("bench.regression", {"warning": warning}, level="warning")
            run("probe", "wordpress.browser-probe", [f"url={probe_url}"])
            broken = broken_before or broken_after or front.get("fatal")
            delta = test_delta(
                before,
                after,
                plugin_broken=broken,
                patch_tests=bool(split.test_patch),
                untested_reason=untested_reason or "; ".join(reasons) or None,
            )
            # written through its contract (codebox_tui/contracts/evaluation.py): a writer bug fails here
            evaluation = PatchEvaluation.model_validate(
                {
                    "schema": PATCH_EVALUATION_SCHEMA,
                    "plugin": slug,
                    "patch": patch_file.name,
                    **({"source": source} if source else {}),
                    "applied": applied.returncode == 0 and (not split.test_patch or tests_applied.returncode == 0),
                    "tests": delta,
                    "split": {
                        "rule": rule.name,
                        "testFiles": split.test_files,
                        "codeFiles": split.code_files,
                        "testsRunBefore": bool(split.test_patch and has_tests),
                    },
                    "failures": {"before": _failures(before), "after": _failures(after)},
                    "pluginLoad": {"before": broken_before, "after": broken_after},
                    "steps": steps,
                    "probe": {**(_probe_summary(session.run_dir) or {}), "frontEnd": front},
                    **({"bench": bench_check} if bench_check is not None else {}),
                }
            ).to_json()
            session.add_evidence(layout.CONTRIBUTOR_PATCH, "contributor-patch", "text/x-diff").write_bytes(
                patch_file.read_bytes()
            )
            session.add_evidence(layout.EVALUATE_PATCH, "patch-evaluation", "application/json").write_text(
                json.dumps(evaluation, indent=2) + "\n", encoding="utf-8"
            )
            summary = handle.capture()
            run_dir = session.run_dir
            # a site whose state could not be measured, or a control file the patch's code changed: never clean
            site_risks = unclean_risks(handle.site_state.diff)
            success = (
                evaluation["applied"]
                and delta["verdict"] in SUCCESS_VERDICTS
                and front["status"] == "passed"
                and not site_risks
            )
            handle.status = "completed" if success else "failed"
        details = unclean_details(handle.site_state.diff)
        return {
            **evaluation,
            "success": success,
            **({"siteStateRisks": site_risks, "siteStateRiskDetails": details} if site_risks else {}),
            "runDir": str(run_dir),
            "bundleDir": str(getattr(summary, "path", run_dir)),
            "bundleId": getattr(summary, "id", None),
        }
    finally:
        browser_driver.discard()  # a run that ended before its probe
        shutil.rmtree(scratch, ignore_errors=True)


def _side_counts(side: str, suite: TestSuite | None) -> dict[str, Any]:
    if suite is None:
        return {"side": side, "tests": 0}
    return {
        "side": side,
        "tests": suite.tests,
        "passed": suite.passed,
        "failed": suite.failed,
        "skipped": suite.skipped,
    }


def check_slug(slug: str) -> str:
    if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,99}", slug):
        raise BadInputError(
            f"--slug {slug!r}: expected a plugin folder name (lower-case letters, digits, '-' and '_')",
            code="invalid-arg",
            field="--slug",
        )
    return slug


def _failures(suite: TestSuite | None) -> list[dict[str, str]]:
    return [
        {"test": f"{c.classname or ''}::{c.name}", "status": c.status, "message": c.message or ""}
        for c in (suite.cases if suite else [])
        if c.status in BAD
    ]


def _merge(suites: list[TestSuite], phase: str) -> TestSuite | None:
    if not suites:
        return None
    cases = [c for s in suites for c in s.cases]
    failed = sum(s.failed for s in suites)
    status = "failed" if failed else ("unknown" if any(s.status == "unknown" for s in suites) else "passed")
    refs = [r for s in suites for r in s.rawLogReferences]
    return TestSuite(
        name=f"wordpress.phpunit:{phase}",
        status=status,
        tests=sum(s.tests for s in suites),
        passed=sum(s.passed for s in suites),
        failed=failed,
        skipped=sum(s.skipped for s in suites),
        cases=cases,
        rawLogReferences=refs,
        phase=phase,
    )


def _probe_summary(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / layout.BROWSER_DIR / "summary.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return {k: data.get(k) for k in ("status", "url", "httpStatus", "counts", "pageErrors", "consoleErrors")}


# -- the advisory regression check (docs/bench.md, "In evaluate-patch") ------------------------------------------
BENCH_REGRESSION_RATIO = 1.5  # after/before median above this: a warning, never a change of the verdict
BENCH_WARMUP = 1  # per path and side, before the timed requests


def check_bench_paths(paths: list[str], count: int = 5) -> list[str]:
    """``--bench`` paths and ``--bench-count`` as wordpress.bench arguments, checked before anything boots."""
    if not paths:
        return []
    unique = list(dict.fromkeys(paths))
    try:
        bench_settings({"path": PATH_SEPARATOR.join(unique), "count": str(count), "warmup": str(BENCH_WARMUP)})
    except BadInputError as error:
        flag = "--bench-count" if error.field == "count" else "--bench"
        raise BadInputError(f"{flag}: {error.message}", code=error.code, field=flag) from None
    return [*(f"path={p}" for p in unique), f"count={count}", f"warmup={BENCH_WARMUP}"]


def _bench_document(result: ExecutionResult | None) -> dict[str, Any] | None:
    value = result.result.json_ if result is not None and result.result is not None else None
    return value if isinstance(value, dict) and isinstance(value.get("paths"), list) else None


def compare_benches(before: ExecutionResult | None, after: ExecutionResult | None) -> dict[str, Any]:
    """Each path's median before and after the patch and their ratio; a path whose ratio is above
    ``BENCH_REGRESSION_RATIO`` gets a warning. A side that did not run leaves its figures empty (and a warning)."""
    docs = {"before": _bench_document(before), "after": _bench_document(after)}
    by_side = {
        side: {str(p.get("path")): p for p in (doc or {}).get("paths", []) if isinstance(p, dict)}
        for side, doc in docs.items()
    }
    warnings = [f"the bench did not run {side} the patch" for side, doc in docs.items() if doc is None]
    paths: list[dict[str, Any]] = []
    for path in dict.fromkeys([*by_side["before"], *by_side["after"]]):
        b, a = by_side["before"].get(path, {}), by_side["after"].get(path, {})
        b_median, a_median = _median(b), _median(a)
        ratio = round(a_median / b_median, 3) if a_median is not None and b_median else None
        regressed = ratio is not None and ratio > BENCH_REGRESSION_RATIO
        if regressed:
            warnings.append(
                f"{path}: median {b_median:.1f} ms before, {a_median:.1f} ms after the patch "
                f"(x{ratio:.2f}, above x{BENCH_REGRESSION_RATIO})"
            )
        paths.append(
            {
                "path": path,
                "beforeMedianMs": b_median,
                "afterMedianMs": a_median,
                "ratio": ratio,
                "beforePeakMemoryBytes": _int_or_none(b.get("peakMemoryBytes")),
                "afterPeakMemoryBytes": _int_or_none(a.get("peakMemoryBytes")),
                "regressed": regressed,
            }
        )
    return {
        "threshold": BENCH_REGRESSION_RATIO,
        "before": str((docs["before"] or {}).get("evidence") or ""),
        "after": str((docs["after"] or {}).get("evidence") or ""),
        "paths": paths,
        "warnings": warnings,
    }


def _median(entry: dict[str, Any]) -> float | None:
    latency = entry.get("latencyMs")
    value = latency.get("median") if isinstance(latency, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
