"""``wordpress.phpunit``: run a mounted plugin's PHPUnit suite inside the sandbox and parse its JUnit XML.

PHPUnit comes from Debian's ``phpunit`` package: its sources (``/usr/share/php``) and a copy of
``/usr/bin/phpunit`` are mounted read-only (see :func:`phpunit_tool_mounts`, which the caller adds to
``SandboxSpec.extra_mounts``). Tests are plain ``PHPUnit\\Framework\\TestCase`` classes whose bootstrap
loads ``/wordpress/wp-load.php``; by default WordPress is already loaded in global scope before PHPUnit
starts (``wordpress=global``, see :data:`GLOBAL_BOOTSTRAP_PHP`), so tests can call ``do_shortcode()``,
use ``global $wpdb`` and hooks as in WordPress's own suite. JUnit XML is written to stdout after the
normal output and parsed into a :class:`TestSuite` with per-case results; the raw output is kept
under ``files/phpunit/``.
"""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codebox_tui.contracts.bundle import TestCase, TestSuite
from codebox_tui.contracts.runtime import MountSpec
from codebox_tui.errors import BadInputError, CodeboxError, ExitCode

if TYPE_CHECKING:
    from codebox_tui.runtime.session import CommandOutcome, RunSession

PHPUNIT_BIN = Path("/usr/bin/phpunit")
PHP_SHARE = Path("/usr/share/php")
SANDBOX_BIN_DIR = "/codebox-phpunit-bin"
SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
GLOBAL_BOOTSTRAP = "wp-global-scope.php"
# PHPUnit includes a configured bootstrap from inside a method, so a bootstrap that requires wp-load.php
# leaves WordPress's file-scope variables ($shortcode_tags, $wp_embed, ...) local to that method:
# do_shortcode() then finds no shortcodes and the_content does not expand them. This prelude runs through
# auto_prepend_file at true global scope (after Playground's own prepend) before PHPUnit starts, as
# WordPress's own test bootstrap arranges;
# a plugin bootstrap that requires wp-load.php again is harmless (wp-config.php is require_once'd).
GLOBAL_BOOTSTRAP_PHP = """<?php
// Codebox: load WordPress in global scope before PHPUnit includes the plugin's bootstrap.
// Playground's own prepend (SQLite integration, environment) runs first: -d replaced it.
if ( is_file( '/internal/shared/auto_prepend_file.php' ) ) {
	require_once '/internal/shared/auto_prepend_file.php';
}
if ( ! defined( 'ABSPATH' ) && is_file( '/wordpress/wp-load.php' ) ) {
	require_once '/wordpress/wp-load.php';
}
"""


class ToolchainMissingError(CodeboxError):
    exit_code = ExitCode.SANDBOX_FAILURE


def phpunit_tool_mounts(scratch_dir: Path) -> list[MountSpec]:
    """Read-only mounts of Debian's PHPUnit; raises a structured error naming whatever is missing."""
    missing = [str(p) for p in (PHPUNIT_BIN, PHP_SHARE / "PHPUnit" / "Framework" / "TestCase.php") if not p.is_file()]
    if missing:
        raise ToolchainMissingError(
            "PHPUnit toolchain missing: " + ", ".join(missing), code="phpunit-missing", field="wordpress.phpunit",
            details={"missing": missing, "hint": "install Debian's phpunit package (apt-get install phpunit)"},
        )
    scratch_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy2(PHPUNIT_BIN, scratch_dir / "phpunit")
    (scratch_dir / GLOBAL_BOOTSTRAP).write_text(GLOBAL_BOOTSTRAP_PHP, encoding="utf-8")
    return [
        MountSpec(source=str(PHP_SHARE), target=str(PHP_SHARE), mode="readonly", captureArtifacts=False),
        MountSpec(source=str(scratch_dir), target=SANDBOX_BIN_DIR, mode="readonly", captureArtifacts=False),
    ]


def _int(el: ET.Element, name: str) -> int:
    try:
        return int(float(el.get(name, "0")))
    except ValueError:
        return 0


def parse_junit(xml_text: str, *, name: str = "wordpress.phpunit") -> TestSuite:
    """Parse PHPUnit's JUnit XML into one TestSuite with a TestCase per test (nested suites flattened)."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise BadInputError(f"JUnit XML cannot be parsed: {exc}", code="invalid-junit") from exc
    cases: list[TestCase] = []
    for case in root.iter("testcase"):
        failure = case.find("failure")
        error = case.find("error")
        skipped = case.find("skipped")
        problem = failure if failure is not None else error
        message: str | None
        details: str | None
        if problem is not None:
            status = "failed" if failure is not None else "error"
            details = (problem.text or "").strip()
            message = problem.get("message") or (details.splitlines()[0] if details else status)
        elif skipped is not None:
            status, message, details = "skipped", skipped.get("message"), (skipped.text or "").strip() or None
        else:
            status, message, details = "passed", None, None
        time_s = case.get("time")
        cases.append(TestCase(
            name=case.get("name", "?"), classname=case.get("class") or case.get("classname"),
            status=status, timeSeconds=float(time_s) if time_s else None, message=message, details=details or None,
        ))
    failed = sum(1 for c in cases if c.status in ("failed", "error"))
    skipped_n = sum(1 for c in cases if c.status == "skipped")
    passed = sum(1 for c in cases if c.status == "passed")
    if failed:
        status_s = "failed"
    elif not cases:
        status_s = "unknown"
    elif skipped_n == len(cases):
        status_s = "skipped"
    else:
        status_s = "passed"
    return TestSuite(name=name, status=status_s, tests=len(cases), passed=passed, failed=failed,
                     skipped=skipped_n, cases=cases)


def split_output(stdout: str) -> tuple[str, str | None]:
    """PHPUnit's human output and the JUnit document that ``--log-junit php://stdout`` appended."""
    start = stdout.find("<?xml")
    end = stdout.rfind("</testsuites>")
    if start < 0 or end < start:
        return stdout, None
    end += len("</testsuites>")
    return stdout[:start] + stdout[end:], stdout[start:end]


def _check_rel(value: str, field: str) -> str:
    if value.startswith("/") or ".." in value.split("/") or not value.strip():
        raise BadInputError(f"{field} must be a plugin-relative path, got {value!r}", code="invalid-arg", field=field)
    return value


def phpunit(session: RunSession, args: dict[str, str], timeout_s: float) -> CommandOutcome:
    from codebox_tui.runtime.session import CommandOutcome

    slug = args["plugin-slug"]
    if not SLUG.match(slug):
        raise BadInputError(f"plugin-slug must be a directory name, got {slug!r}", code="invalid-slug",
                            field="plugin-slug")
    plugin_dir = f"/wordpress/wp-content/plugins/{slug}"
    testcase_php = PHP_SHARE / "PHPUnit/Framework/TestCase.php"
    probe = session.sandbox.run_php(
        f"<?php echo json_encode(['bin' => file_exists('{SANDBOX_BIN_DIR}/phpunit'),"
        f" 'src' => file_exists('{testcase_php}'), 'plugin' => is_dir('{plugin_dir}')]);",
        min(timeout_s, 60.0),
    )
    import json as _json

    try:
        found = _json.loads(probe.text.strip().splitlines()[-1])
    except (ValueError, IndexError):
        found = {}
    missing = [what for key, what in (("bin", f"{SANDBOX_BIN_DIR}/phpunit (copy of /usr/bin/phpunit)"),
                                      ("src", "/usr/share/php (Debian phpunit sources)")) if not found.get(key)]
    if missing:
        raise ToolchainMissingError(
            "PHPUnit is not mounted in this sandbox: missing " + ", ".join(missing), code="phpunit-missing",
            field="wordpress.phpunit",
            details={"missing": missing, "hint": "boot with phpunit_tool_mounts() in SandboxSpec.extra_mounts"},
        )
    if not found.get("plugin"):
        raise BadInputError(f"no plugin directory {plugin_dir} in the sandbox", code="missing-plugin-slug",
                            field="plugin-slug")
    load_wp = args.get("wordpress", "global")
    if load_wp not in ("global", "none"):
        raise BadInputError(f"wordpress must be 'global' or 'none', got {load_wp!r}", code="invalid-arg",
                            field="wordpress")
    argv = ["php", "-d", "include_path=.:/usr/share/php"]
    if load_wp == "global":
        argv += ["-d", f"auto_prepend_file={SANDBOX_BIN_DIR}/{GLOBAL_BOOTSTRAP}"]
    argv += [f"{SANDBOX_BIN_DIR}/phpunit", "--log-junit",
            "php://stdout", "--colors=never", "--do-not-cache-result"]
    xml_arg = args.get("phpunit-xml")
    if xml_arg:
        argv += ["-c", f"{plugin_dir}/{_check_rel(xml_arg, 'phpunit-xml')}"]
    else:
        argv += ["-c", f"{plugin_dir}/phpunit.xml"] if _exists(session, f"{plugin_dir}/phpunit.xml") else (
            ["-c", f"{plugin_dir}/phpunit.xml.dist"] if _exists(session, f"{plugin_dir}/phpunit.xml.dist") else [])
    if args.get("test-file"):
        argv.append(f"{plugin_dir}/{_check_rel(args['test-file'], 'test-file')}")
    elif "-c" not in argv:
        argv.append(f"{plugin_dir}/tests")
    from codebox_tui.runtime.commands import sandbox_env

    result = session.sandbox.run_cli(argv, timeout_s, env=sandbox_env(session) or None)
    human, junit = split_output(result.text)
    index = len(session.test_suites) + 1
    name = "wordpress.phpunit" if index == 1 else f"wordpress.phpunit:{index}"
    rel = f"files/phpunit/{index}"
    raw_path = session.add_evidence(f"{rel}/output.txt", "test-output", "text/plain")
    raw_path.write_text(session.redact(human + ("\n" + result.errors if result.errors else "")), encoding="utf-8")
    refs = [{"path": f"{rel}/output.txt", "kind": "test-output"}]
    if junit is not None:
        xml_path = session.add_evidence(f"{rel}/junit.xml", "test-results", "application/xml")
        xml_path.write_text(session.redact(junit), encoding="utf-8")
        refs.append({"path": f"{rel}/junit.xml", "kind": "test-results"})
        suite = parse_junit(junit, name=name)
    else:
        suite = TestSuite(name=name, status="unknown")
    suite = suite.model_copy(update={"rawLogReferences": refs})
    session.test_suites.append(suite)
    session.emit("tests.finished", {"suite": name, "status": suite.status, "tests": suite.tests,
                                    "passed": suite.passed, "failed": suite.failed, "skipped": suite.skipped},
                 level="info" if suite.status in ("passed", "skipped") else "warning")
    summary: dict[str, Any] = suite.model_dump(mode="json", exclude_none=True)
    return CommandOutcome(stdout=human, stderr=result.errors, exit_code=0 if suite.status == "passed" else 1,
                          json=summary, artifact_refs=refs)


def _exists(session: RunSession, path: str) -> bool:
    result = session.sandbox.run_php(f"<?php echo file_exists({path!r}) ? 'yes' : 'no';", 30.0)
    return result.text.strip().endswith("yes")
