"""``evaluate-patch``: apply a contributor's patch to a copy of a plugin inside a sandbox and judge it.

Flow: copy the plugin to scratch (the original is never touched) → check the patch applies → boot with the
copy mounted read-write (baseline taken before boot) → activate → PHPUnit *before* → apply the patch →
PHPUnit *after* → browser probe of the front end → ``files/evaluate-patch.json`` (the test delta) and
``files/contributor.patch`` → one bundle whose patch.diff is exactly what the patch changed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codebox_tui.contracts.bundle import TestSuite
from codebox_tui.contracts.runtime import MountSpec, RuntimePolicy
from codebox_tui.errors import BadInputError, CodeboxError

EVALUATION_SCHEMA = "wp-codebox/patch-evaluation/v1"
COMMANDS = ["inspect-mounted-inputs", "wordpress.run-php", "wordpress.phpunit", "wordpress.browser-probe"]


def test_delta(before: TestSuite | None, after: TestSuite | None) -> dict[str, Any]:
    """Per-case comparison: fixed, broken, still failing, added, removed."""
    def statuses(suite: TestSuite | None) -> dict[str, str]:
        return {f"{c.classname or ''}::{c.name}": c.status for c in (suite.cases if suite else [])}

    b, a = statuses(before), statuses(after)
    bad = ("failed", "error")
    delta: dict[str, list[str]] = {"fixed": [], "broken": [], "stillFailing": [], "added": [], "removed": []}
    for name in sorted(set(b) | set(a)):
        if name not in b:
            delta["added"].append(name)
        elif name not in a:
            delta["removed"].append(name)
        elif b[name] in bad and a[name] == "passed":
            delta["fixed"].append(name)
        elif b[name] == "passed" and a[name] in bad:
            delta["broken"].append(name)
        elif b[name] in bad and a[name] in bad:
            delta["stillFailing"].append(name)
    verdict = "regression" if delta["broken"] else ("improvement" if delta["fixed"] else "neutral")
    if after is not None and after.status == "failed" and not delta["broken"]:
        verdict = "still-failing" if not delta["fixed"] else "partial"
    return {"verdict": verdict, **delta,
            "before": _counts(before), "after": _counts(after)}


def _counts(suite: TestSuite | None) -> dict[str, Any] | None:
    if suite is None:
        return None
    return {"status": suite.status, "tests": suite.tests, "passed": suite.passed, "failed": suite.failed,
            "skipped": suite.skipped}


def _git_apply(cwd: Path, patch: Path, check: bool) -> subprocess.CompletedProcess[str]:
    from codebox_tui.bundle.hostgit import HostGit  # the one hardened way to run git (docs/security-host.md)

    args = ["apply", "--whitespace=nowarn", *(["--check"] if check else []), str(patch.resolve())]
    done = HostGit(cwd).run(*args, timeout=60)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(errors="replace"),
                                       done.stderr.decode(errors="replace"))


def evaluate_patch(plugin_dir: Path, patch_file: Path, *, artifacts_dir: Path, tests: list[str] | None = None,
                   probe_url: str = "/", wp: str = "6.5", php: str = "8.3",
                   on_event: Callable[[Any], None] | None = None) -> dict[str, Any]:
    from codebox_tui.runtime.backend import SandboxSpec
    from codebox_tui.runtime.phpunit import phpunit_tool_mounts
    from codebox_tui.runtime.session import RunSession

    plugin_dir = plugin_dir.resolve()
    if not plugin_dir.is_dir():
        raise BadInputError(f"plugin directory not found: {plugin_dir}", code="missing-source", field="--plugin")
    if not patch_file.is_file():
        raise BadInputError(f"patch file not found: {patch_file}", code="missing-source", field="--patch")
    slug = plugin_dir.name
    scratch = Path(tempfile.mkdtemp(prefix="codebox-evaluate-"))
    try:
        copy = scratch / slug
        shutil.copytree(plugin_dir, copy, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        check = _git_apply(copy, patch_file, check=True)
        if check.returncode != 0:
            raise BadInputError(f"the patch does not apply to {plugin_dir.name}: {check.stderr.strip()[:500]}",
                                code="patch-does-not-apply", field="--patch")
        has_tests = bool(tests) or (copy / "phpunit.xml").is_file() or (copy / "phpunit.xml.dist").is_file()
        policy = RuntimePolicy(commands=COMMANDS)
        spec = SandboxSpec(
            mounts=[MountSpec(source=str(copy), target=f"/wordpress/wp-content/plugins/{slug}", mode="readwrite",
                              metadata={"mountRole": "plugin", "slug": slug, "evaluation": "patched-copy"})],
            policy=policy, wp=wp, php=php, metadata={"flow": "evaluate-patch", "plugin": str(plugin_dir),
                                                     "patch": str(patch_file.resolve())},
            extra_mounts=phpunit_tool_mounts(scratch / "phpunit-bin") if has_tests else [],
        )
        with RunSession(spec, artifacts_dir, on_event=on_event) as session:
            steps: list[dict[str, Any]] = []

            def run(phase: str, command: str, args: list[str]) -> None:
                try:
                    result = session.execute(command, args, timeout_s=300)
                    steps.append({"phase": phase, "command": command, "exitCode": result.exitCode})
                except CodeboxError as exc:
                    steps.append({"phase": phase, "command": command, "error": exc.to_dict()})

            run("setup", "wordpress.run-php", [
                "code=require_once ABSPATH . 'wp-admin/includes/plugin.php'; $f = array_keys(get_plugins('/"
                + slug + "')); echo $f ? json_encode(activate_plugin('" + slug + "/' . $f[0])) : 'no plugin file';"])
            test_args = [[f"plugin-slug={slug}", f"test-file={t}"] for t in tests] if tests else [
                [f"plugin-slug={slug}"]]
            before: TestSuite | None = None
            after: TestSuite | None = None
            if has_tests:
                n0 = len(session.test_suites)
                for args in test_args:
                    run("before", "wordpress.phpunit", args)
                before = _merge(session.test_suites[n0:], "before")
            # into what the sandbox sees (the mount's private copy, README "Mounts"), after the "before" tests
            applied = _git_apply(session.mount_dir(0), patch_file, check=False)
            steps.append({"phase": "apply", "command": "git apply", "exitCode": applied.returncode,
                          "stderr": applied.stderr[-1000:]})
            session.emit("patch.applied", {"patch": patch_file.name, "exitCode": applied.returncode})
            if has_tests:
                n1 = len(session.test_suites)
                for args in test_args:
                    run("after", "wordpress.phpunit", args)
                after = _merge(session.test_suites[n1:], "after")
            if before is not None and after is not None:
                session.test_suites[:] = [before, after]
            run("probe", "wordpress.browser-probe", [f"url={probe_url}"])
            delta = test_delta(before, after)
            evaluation = {"schema": EVALUATION_SCHEMA, "plugin": slug, "patch": patch_file.name,
                          "applied": applied.returncode == 0, "tests": delta, "steps": steps,
                          "probe": _probe_summary(session.run_dir)}
            session.add_evidence("files/contributor.patch", "contributor-patch", "text/x-diff").write_bytes(
                patch_file.read_bytes())
            session.add_evidence("files/evaluate-patch.json", "patch-evaluation", "application/json").write_text(
                json.dumps(evaluation, indent=2) + "\n", encoding="utf-8")
            summary = session.capture()
            run_dir = session.run_dir
        return {**evaluation, "success": evaluation["applied"] and delta["verdict"] != "regression",
                "runDir": str(run_dir), "bundleDir": str(getattr(summary, "path", run_dir)),
                "bundleId": getattr(summary, "id", None)}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _merge(suites: list[TestSuite], phase: str) -> TestSuite | None:
    if not suites:
        return None
    cases = [c for s in suites for c in s.cases]
    failed = sum(s.failed for s in suites)
    status = "failed" if failed else ("unknown" if any(s.status == "unknown" for s in suites) else "passed")
    refs = [r for s in suites for r in s.rawLogReferences]
    return TestSuite(name=f"wordpress.phpunit:{phase}", status=status, tests=sum(s.tests for s in suites),
                     passed=sum(s.passed for s in suites), failed=failed, skipped=sum(s.skipped for s in suites),
                     cases=cases, rawLogReferences=refs, phase=phase)


def _probe_summary(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / "files" / "browser" / "summary.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return {k: data.get(k) for k in ("status", "url", "httpStatus", "counts", "pageErrors", "consoleErrors")}
