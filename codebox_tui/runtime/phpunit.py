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

import json
import re
import secrets
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, cast

from codebox_tui.bundle import layout
from codebox_tui.contracts.bundle import TestCase, TestSuite
from codebox_tui.contracts.runtime import MountSpec
from codebox_tui.errors import BadInputError, CodeboxError
from codebox_tui.runtime import wp_tests
from codebox_tui.runtime.commands import sandbox_env
from codebox_tui.runtime.context import CommandContext
from codebox_tui.runtime.mounts import plugin_target
from codebox_tui.runtime.outcome import CommandOutcome
from codebox_tui.runtime.php_literal import php_string
from codebox_tui.runtime.test_progress import TestTally, strip_log_lines
from codebox_tui.runtime.wp_tests import ToolchainMissingError

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
if ( @is_file( '/internal/shared/auto_prepend_file.php' ) ) {  // Playground only (outside native's open_basedir)
	require_once '/internal/shared/auto_prepend_file.php';
}
if ( ! defined( 'ABSPATH' ) && is_file( '/wordpress/wp-load.php' ) ) {
	require_once '/wordpress/wp-load.php';
}
"""


def phpunit_tool_mounts(
    scratch_dir: Path, *, wp_tests_lib: Path | None = None, phpunit_polyfills: Path | None = None
) -> list[MountSpec]:
    """Read-only mounts of Debian's PHPUnit, and of the WordPress core test library and the PHPUnit
    Polyfills when this machine has them (see :mod:`codebox_tui.runtime.wp_tests`); raises a structured
    error naming whatever is missing."""
    missing = [str(p) for p in (PHPUNIT_BIN, PHP_SHARE / "PHPUnit" / "Framework" / "TestCase.php") if not p.is_file()]
    if missing:
        raise ToolchainMissingError(
            "PHPUnit toolchain missing: " + ", ".join(missing),
            code="phpunit-missing",
            field="wordpress.phpunit",
            details={"missing": missing, "hint": "install Debian's phpunit package (apt-get install phpunit)"},
        )
    scratch_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy2(PHPUNIT_BIN, scratch_dir / "phpunit")
    (scratch_dir / GLOBAL_BOOTSTRAP).write_text(GLOBAL_BOOTSTRAP_PHP, encoding="utf-8")
    (scratch_dir / wp_tests.TESTS_CONFIG).write_text(wp_tests.TESTS_CONFIG_PHP, encoding="utf-8")
    (scratch_dir / wp_tests.TESTS_PRELUDE).write_text(
        wp_tests.tests_prelude_php(f"{SANDBOX_BIN_DIR}/{wp_tests.TESTS_CONFIG}"), encoding="utf-8"
    )
    toolchain = wp_tests.toolchain_mounts(wp_tests_lib, phpunit_polyfills)
    return [
        *toolchain,
        MountSpec(source=str(PHP_SHARE), target=str(PHP_SHARE), mode="readonly", captureArtifacts=False),
        MountSpec(source=str(scratch_dir), target=SANDBOX_BIN_DIR, mode="readonly", captureArtifacts=False),
    ]


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
            message = (
                problem.get("message")
                or _assertion_message(details, case.get("class") or case.get("classname"), case.get("name", "?"))
                or status
            )
        elif skipped is not None:
            status, message, details = "skipped", skipped.get("message"), (skipped.text or "").strip() or None
        else:
            status, message, details = "passed", None, None
        time_s = case.get("time")
        cases.append(
            TestCase(
                name=case.get("name", "?"),
                classname=case.get("class") or case.get("classname"),
                status=status,
                timeSeconds=float(time_s) if time_s else None,
                message=message,
                details=details or None,
            )
        )
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
    return TestSuite(
        name=name, status=status_s, tests=len(cases), passed=passed, failed=failed, skipped=skipped_n, cases=cases
    )


def _assertion_message(details: str, classname: str | None, name: str) -> str:
    """The assertion message of a JUnit failure (``Failed asserting that 3 is identical to 2.``): PHPUnit 9
    writes the test id on the first line, then the message, then a blank line and the stack."""
    lines = details.splitlines()
    if lines and (
        lines[0].strip() == f"{classname}::{name}"
        or lines[0].strip().endswith(f"::{name}")
        or lines[0].strip().startswith(f"{classname}::{name} ")
    ):
        lines = lines[1:]
    message: list[str] = []
    for line in lines:
        if not line.strip():
            if message:
                break
            continue
        message.append(line.rstrip())
    text = "\n".join(message).strip()
    return text[:2000]


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


PROBE_PHP = r"""<?php
$plugin = %(plugin)s; $bin = %(bin)s; $src = %(src)s; $xml = %(xml)s; $bootstrap = %(bootstrap)s;
$read = function ( $path ) {
	return is_file( $path ) ? (string) file_get_contents( $path, false, null, 0, 65536 ) : null;
};
$configs = array();
foreach ( $xml ? array( $xml ) : array( 'phpunit.xml', 'phpunit.xml.dist' ) as $name ) {
	if ( is_file( "$plugin/$name" ) ) { $configs[ $name ] = $read( "$plugin/$name" ); break; }
}
$boot_rel = $bootstrap;
if ( ! $boot_rel && $configs ) {
	$doc = @simplexml_load_string( reset( $configs ) );
	$boot_rel = ( $doc && isset( $doc['bootstrap'] ) ) ? (string) $doc['bootstrap'] : null;
}
if ( ! $boot_rel && is_file( "$plugin/tests/bootstrap.php" ) ) { $boot_rel = 'tests/bootstrap.php'; }
$boot_rel = $boot_rel ? preg_replace( '#^\./#', '', $boot_rel ) : null;
$exists = array();
foreach ( %(paths)s as $key => $path ) { $exists[ $key ] = file_exists( $path ); }
echo json_encode( array( 'bin' => is_file( $bin ), 'src' => is_file( $src ), 'plugin' => is_dir( $plugin ),
	'configs' => array_keys( $configs ), 'configSource' => $configs ? reset( $configs ) : null,
	'bootstrap' => $boot_rel,
	'bootstrapSource' => $boot_rel ? $read( "$plugin/$boot_rel" ) : null, 'tests' => is_dir( "$plugin/tests" ),
	'exists' => $exists ), JSON_UNESCAPED_SLASHES );
"""


def _php(value: str | None) -> str:
    if value is None:
        return "null"
    return php_string(value)


def _probe(
    session: CommandContext, plugin_dir: str, xml: str | None, bootstrap: str | None, timeout_s: float
) -> dict[str, Any]:
    paths = {
        "vendorLib": f"{plugin_dir}/{wp_tests.VENDOR_LIB}/includes/bootstrap.php",
        "vendorPolyfills": f"{plugin_dir}/{wp_tests.VENDOR_POLYFILLS}/{wp_tests.POLYFILLS_FILE}",
        "vendorAutoload": f"{plugin_dir}/vendor/autoload.php",
        "vendorPhpunit": f"{plugin_dir}/vendor/bin/phpunit",
        "mountedLib": f"{wp_tests.LIB_TARGET}/includes/bootstrap.php",
        "mountedPolyfills": f"{wp_tests.POLYFILLS_TARGET}/{wp_tests.POLYFILLS_FILE}",
    }
    paths_php = "array(" + ", ".join(f"{_php(k)} => {_php(v)}" for k, v in paths.items()) + ")"
    code = PROBE_PHP % {
        "plugin": _php(plugin_dir),
        "bin": _php(f"{SANDBOX_BIN_DIR}/phpunit"),
        "src": _php(str(PHP_SHARE / "PHPUnit/Framework/TestCase.php")),
        "xml": _php(xml),
        "bootstrap": _php(bootstrap),
        "paths": paths_php,
    }
    result = session.sandbox.run_php(code, min(timeout_s, 60.0))
    try:
        found = json.loads(result.text.strip().splitlines()[-1])
    except (ValueError, IndexError):
        found = {}
    return found if isinstance(found, dict) else {}


def _toolchain_mount(session: CommandContext, kind: str) -> MountSpec | None:
    return next((m for m in session.spec.extra_mounts if (m.metadata or {}).get("toolchain") == kind), None)


def _tests_lib_env(session: CommandContext, plugin_dir: str, found: dict[str, Any]) -> dict[str, str]:
    """Where the core test library and the polyfills are inside the sandbox, in the variables a scaffolded
    bootstrap reads; an error naming every place looked in when one is missing."""
    exists = found.get("exists") or {}
    lib_mount, poly_mount = _toolchain_mount(session, "wp-tests-lib"), _toolchain_mount(session, "phpunit-polyfills")
    lib: str | None = None
    if (
        lib_mount is not None
        and (lib_mount.metadata or {}).get("origin") in ("option", "env")
        and exists.get("mountedLib")
    ):
        lib = wp_tests.LIB_TARGET
    elif exists.get("vendorLib"):
        lib = f"{plugin_dir}/{wp_tests.VENDOR_LIB}"
    elif lib_mount is not None and exists.get("mountedLib"):
        lib = wp_tests.LIB_TARGET
    if lib is None:
        looked = [
            "--wp-tests-lib DIR (not given)",
            "$WP_TESTS_DIR on this machine (unset)",
            f"<plugin>/{wp_tests.VENDOR_LIB} ({plugin_dir}/{wp_tests.VENDOR_LIB}: not there)",
            f"{wp_tests.DEFAULT_LIB} (not there)",
        ]
        raise ToolchainMissingError(
            "the suite's bootstrap loads the WordPress core PHPUnit library (WP_UnitTestCase), which was not "
            "found; looked in: " + "; ".join(looked),
            code="wp-tests-lib-missing",
            field="--wp-tests-lib",
            details={
                "lookedIn": looked,
                "needs": "includes/functions.php, includes/bootstrap.php, includes/install.php",
                "hint": "pass --wp-tests-lib DIR, set WP_TESTS_DIR, or run composer install (wp-phpunit/wp-phpunit)",
            },
        )
    polyfills: str | None = None
    if poly_mount is not None and exists.get("mountedPolyfills"):
        polyfills = wp_tests.POLYFILLS_TARGET
    elif exists.get("vendorPolyfills"):
        polyfills = f"{plugin_dir}/{wp_tests.VENDOR_POLYFILLS}"
    if polyfills is None and not exists.get("vendorAutoload"):
        looked = [
            "--phpunit-polyfills DIR (not given)",
            "$WP_TESTS_PHPUNIT_POLYFILLS_PATH on this machine (unset)",
            f"<plugin>/{wp_tests.VENDOR_POLYFILLS} ({plugin_dir}/{wp_tests.VENDOR_POLYFILLS}: not there)",
            f"<plugin>/vendor/autoload.php ({plugin_dir}/vendor/autoload.php: not there)",
        ]
        raise ToolchainMissingError(
            "the WordPress core PHPUnit library needs the Yoast PHPUnit Polyfills, which were not found; "
            "looked in: " + "; ".join(looked),
            code="phpunit-polyfills-missing",
            field="--phpunit-polyfills",
            details={
                "lookedIn": looked,
                "needs": wp_tests.POLYFILLS_FILE,
                "hint": "pass --phpunit-polyfills DIR, set WP_TESTS_PHPUNIT_POLYFILLS_PATH, or run "
                "composer install (yoast/phpunit-polyfills)",
            },
        )
    config = f"{SANDBOX_BIN_DIR}/{wp_tests.TESTS_CONFIG}"
    env = {
        "WP_TESTS_DIR": lib,
        "WP_PHPUNIT__DIR": lib,
        "WP_PHPUNIT__TESTS_CONFIG": config,
        "WP_TESTS_SKIP_INSTALL": "1",
    }
    if polyfills is not None:
        env["WP_TESTS_PHPUNIT_POLYFILLS_PATH"] = polyfills
    return env


# A test site installed once per sandbox is put back before every later suite of the same library: the
# installer is the largest part of a short suite (2–5 s), and a copy is what a fresh install would write.
MAX_TEST_SITE_BYTES = 64 * 1024 * 1024
_RESTORE_TEST_SITE_PHP = """<?php
@unlink( %(journal)s ); // a journal left by a killed suite would be replayed onto the restored file
echo is_file( %(journal)s ) ? 'journal-left' : 'ok';
"""


def _test_site_key(session: CommandContext, env: dict[str, str]) -> str | None:
    """What a kept install is valid for: this sandbox, the library and single or multisite. Only a library
    mounted read-only from the host (``--wp-tests-lib``, ``$WP_TESTS_DIR``, the default path) qualifies;
    one inside the plugin's ``vendor/`` can be changed by the patch, so it is installed every time."""
    if env.get("WP_TESTS_DIR") != wp_tests.LIB_TARGET:
        return None
    multisite = env.get("WP_MULTISITE") == "1" or env.get("WP_TESTS_MULTISITE") == "1"
    return f"{session.sandbox.id}|{env['WP_TESTS_DIR']}|{'ms' if multisite else 'single'}"


def prepare_test_site(
    session: CommandContext, env: dict[str, str], timeout_s: float, *, core_tests: bool = False
) -> tuple[bool, str]:
    """A fresh test site for the suite: the copy kept from this sandbox's first install when there is one,
    else the library's installer (whose result is kept, on the host, for the next suite). ``core_tests``:
    installed as WordPress's own suite wants it (``WP_RUN_CORE_TESTS``; runtime/core_phpunit.py)."""
    key = _test_site_key(session, env)
    kept = session.test_sites.get(key) if key else None
    if kept is not None:
        journal = _php(wp_tests.TESTS_DB_PATH + "-journal")
        cleared = session.sandbox.run_php(_RESTORE_TEST_SITE_PHP % {"journal": journal}, min(timeout_s, 60.0))
        if cleared.text.strip() == "ok":
            session.sandbox.write_file(wp_tests.TESTS_DB_PATH, kept, min(timeout_s, 60.0))
            return True, (
                "Test site restored: a copy of this sandbox's first install of it "
                f"({wp_tests.TESTS_DB_PATH}), as the installer would write it"
            )
    installed, output = _install_test_site(session, env, timeout_s, core_tests=core_tests)
    if installed and key:
        try:
            session.test_sites[key] = session.sandbox.read_file(
                wp_tests.TESTS_DB_PATH, min(timeout_s, 60.0), max_bytes=MAX_TEST_SITE_BYTES
            )
        except CodeboxError:
            session.test_sites.pop(key, None)  # too large or unreadable: install again next time
    return installed, output


def _install_test_site(
    session: CommandContext, env: dict[str, str], timeout_s: float, *, core_tests: bool
) -> tuple[bool, str]:
    """Run the library's ``includes/install.php`` (what its bootstrap would spawn with ``system()``) as a
    separate PHP request in the sandbox: a fresh test site with the ``wptests_`` tables."""
    multisite = env.get("WP_MULTISITE") == "1" or env.get("WP_TESTS_MULTISITE") == "1"
    argv = [
        "php",
        "-d",
        "include_path=.:/usr/share/php",
        "-d",
        f"auto_prepend_file={SANDBOX_BIN_DIR}/{wp_tests.TESTS_PRELUDE}",
        f"{env['WP_TESTS_DIR']}/includes/install.php",
        env["WP_PHPUNIT__TESTS_CONFIG"],
        "run_ms_tests" if multisite else "no_ms_tests",
        "run_core_tests" if core_tests else "no_core_tests",
    ]
    result = session.sandbox.run_cli(argv, timeout_s, env=env)
    output = (result.text + ("\n" + result.errors if result.errors else "")).strip()
    ok = result.exit_code == 0 and "Installing..." in result.text and "Fatal error" not in result.text
    return ok, output


# Causes a suite commonly cannot run for, recognised in PHPUnit's output, each with what would make it run.
_FIXTURE = r"(setUp|tearDown|setUpBeforeClass|tearDownAfterClass|assertPreConditions|assertPostConditions)"
REMEDIES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(rf"Declaration of (\S+)::{_FIXTURE}\(\) must be compatible with \S+::{_FIXTURE}\(\): void"),
        "{0} declares {1}() without `: void`, as PHPUnit 7 allowed; PHPUnit 8 and later (Codebox runs PHPUnit 9) need "
        "it: declare `{1}(): void`, or with the PHPUnit Polyfills (WP_UnitTestCase uses them) rename it to "
        "{2}() and call parent::{2}()",
    ),
    (
        re.compile(r"PHPUnit Polyfills library is a requirement"),
        "the WordPress test library could not load the Yoast PHPUnit Polyfills: pass --phpunit-polyfills DIR, set "
        "WP_TESTS_PHPUNIT_POLYFILLS_PATH, or run composer install (yoast/phpunit-polyfills)",
    ),
    (
        re.compile(
            r"(Could not find|Failed opening required|failed to open stream|Failed to open stream)"
            r".*(includes/functions\.php|includes/bootstrap\.php|wordpress-tests-lib)"
        ),
        "the suite's bootstrap did not find the WordPress core PHPUnit library: pass --wp-tests-lib DIR, set "
        "WP_TESTS_DIR, or run composer install (wp-phpunit/wp-phpunit)",
    ),
    (
        re.compile(r"Class \W?(WP_UnitTestCase|WP_Ajax_UnitTestCase|WP_Test_REST_TestCase)\W? not found"),
        "the tests extend {0} but the WordPress core PHPUnit library was not loaded: load it from the bootstrap "
        "(tests/bootstrap.php requiring $WP_TESTS_DIR/includes/bootstrap.php) or pass wordpress=tests-lib",
    ),
)
_SNAKE = {
    "setUp": "set_up",
    "tearDown": "tear_down",
    "setUpBeforeClass": "set_up_before_class",
    "tearDownAfterClass": "tear_down_after_class",
    "assertPreConditions": "assert_pre_conditions",
    "assertPostConditions": "assert_post_conditions",
}


def remedy(output: str) -> str | None:
    """What would make the suite run, when its output shows a cause Codebox recognises."""
    for pattern, advice in REMEDIES:
        match = pattern.search(output)
        if match:
            groups = [g for g in match.groups() if g]
            if len(groups) >= 2 and groups[1] in _SNAKE:
                return advice.format(groups[0], groups[1], _SNAKE[groups[1]])
            return advice.format(*groups)
    return None


def no_tests_reason(output: str) -> str:
    """Why no test ran, from PHPUnit's output: its error lines (else its last lines), and what would make
    the suite run when the cause is a known one."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith(("PHPUnit ", "Runtime:", "Configuration:"))]
    reason = ""
    for marker in ("Fatal error", "Error:", "Could not", "Cannot open", "No tests executed", "Warning:"):
        hits = [line for line in lines if marker in line]
        if hits:
            reason = hits[0][:500]
            break
    else:
        reason = (
            " / ".join(lines[-3:])[:500]
            if lines
            else "PHPUnit printed nothing (the bootstrap may have exited: an exit() or die() before any test)"
        )
    advice = remedy(output)
    return f"{reason} — to run it: {advice}" if advice else reason


def phpunit(session: CommandContext, args: dict[str, str], timeout_s: float) -> CommandOutcome:
    slug = args["plugin-slug"]
    if not SLUG.match(slug):
        raise BadInputError(
            f"plugin-slug must be a directory name, got {slug!r}", code="invalid-slug", field="plugin-slug"
        )
    load_as = args.get("load-as", "plugin")
    if load_as not in ("plugin", "mu-plugin"):
        raise BadInputError(
            f"load-as must be plugin or mu-plugin, got {load_as!r}", code="invalid-arg", field="load-as"
        )
    plugin_dir = plugin_target(load_as, slug)
    xml_arg = _check_rel(args["phpunit-xml"], "phpunit-xml") if args.get("phpunit-xml") else None
    boot_arg = _check_rel(args["bootstrap"], "bootstrap") if args.get("bootstrap") else None
    found = _probe(session, plugin_dir, xml_arg, boot_arg, timeout_s)
    missing = [
        what
        for key, what in (
            ("bin", f"{SANDBOX_BIN_DIR}/phpunit (copy of /usr/bin/phpunit)"),
            ("src", "/usr/share/php (Debian phpunit sources)"),
        )
        if not found.get(key)
    ]
    if missing:
        raise ToolchainMissingError(
            "PHPUnit is not mounted in this sandbox: missing " + ", ".join(missing),
            code="phpunit-missing",
            field="wordpress.phpunit",
            details={"missing": missing, "hint": "boot with phpunit_tool_mounts() in SandboxSpec.extra_mounts"},
        )
    if not found.get("plugin"):
        raise BadInputError(
            f"no plugin directory {plugin_dir} in the sandbox", code="missing-plugin-slug", field="plugin-slug"
        )
    if xml_arg and not found.get("configs"):
        raise BadInputError(
            f"phpunit-xml {xml_arg!r} not found in {plugin_dir}", code="missing-phpunit-xml", field="phpunit-xml"
        )
    mode = args.get("wordpress", "auto")
    if mode not in ("auto", "global", "tests-lib", "none"):
        raise BadInputError(
            f"wordpress must be auto, global, tests-lib or none, got {mode!r}", code="invalid-arg", field="wordpress"
        )
    if mode == "auto":
        mode = "tests-lib" if wp_tests.needs_core_library(str(found.get("bootstrapSource") or "")) else "global"
    env = sandbox_env(session)
    install_output = ""
    if mode == "tests-lib":
        env = {**env, **_tests_lib_env(session, plugin_dir, found)}
        installed, install_output = prepare_test_site(session, env, timeout_s)
        if not installed:
            return record_suite(
                session,
                CommandOutcome,
                "",
                install_output,
                junit=None,
                reason="the WordPress test site could not be installed: " + no_tests_reason(install_output),
                mode=mode,
                env=env,
            )
    argv = ["php", "-d", "include_path=.:/usr/share/php"]
    if mode == "global":
        argv += ["-d", f"auto_prepend_file={SANDBOX_BIN_DIR}/{GLOBAL_BOOTSTRAP}"]
    elif mode == "tests-lib":
        argv += ["-d", f"auto_prepend_file={SANDBOX_BIN_DIR}/{wp_tests.TESTS_PRELUDE}"]
    vendor_phpunit = (found.get("exists") or {}).get("vendorPhpunit")
    argv += [
        f"{plugin_dir}/vendor/bin/phpunit" if vendor_phpunit else f"{SANDBOX_BIN_DIR}/phpunit",
        "--log-junit",
        "php://stdout",
        "--log-teamcity",
        "php://stderr",
        "--colors=never",
        "--do-not-cache-result",
    ]
    configs = found.get("configs") or []
    if configs:
        argv += ["-c", f"{plugin_dir}/{configs[0]}"]
    if boot_arg:
        argv += ["--bootstrap", f"{plugin_dir}/{boot_arg}"]
    elif not configs and found.get("bootstrap"):
        argv += ["--bootstrap", f"{plugin_dir}/{found['bootstrap']}"]
    if args.get("filter"):
        argv += ["--filter", args["filter"]]
    if args.get("test-file"):
        # PHPUnit 9 looks for a class named after a file given on the command line, which WordPress-style
        # files (tests/test-word-stats.php → Test_Word_Stats) never match; a <file> in a configuration is
        # loaded by the classes it declares. So one file runs through a configuration made for it.
        test_file = f"{plugin_dir}/{_check_rel(args['test-file'], 'test-file')}"
        xml = single_file_config(
            found.get("configSource"),
            configs[0] if configs else None,
            plugin_dir,
            test_file,
            f"{plugin_dir}/{boot_arg or found.get('bootstrap')}" if boot_arg or found.get("bootstrap") else None,
        )
        config_path = f"/tmp/codebox-phpunit-{secrets.token_hex(6)}.xml"
        session.sandbox.write_file(config_path, xml.encode("utf-8"), 30.0)
        if "-c" in argv:
            i = argv.index("-c")
            argv[i + 1] = config_path
        else:
            argv += ["-c", config_path]
    elif not configs:
        argv.append(f"{plugin_dir}/tests")
    # tests counted as they finish (``tests.progress``), from the TeamCity log on stderr: a display hint only
    suite_name = suite_label(len(session.test_suites) + 1)
    tally = TestTally(lambda counts: session.emit("tests.progress", {"suite": suite_name, **counts.summary()}))
    result = session.sandbox.run_cli(argv, timeout_s, env=env or None, on_stderr=tally.feed)
    tally.finish()
    human, junit = split_output(result.text)
    if install_output:
        human = install_output + "\n" + human
    return record_suite(
        session, CommandOutcome, human, strip_log_lines(result.errors), junit=junit, reason=None, mode=mode, env=env
    )


def single_file_config(
    source: str | None, name: str | None, plugin_dir: str, test_file: str, bootstrap: str | None
) -> str:
    """A PHPUnit configuration that runs only ``test_file``: the plugin's configuration (its settings and
    ``<php>`` section) with its test suites replaced, and the bootstrap made absolute."""
    root: ET.Element | None = None
    if source:
        try:
            root = ET.fromstring(source)
        except ET.ParseError as exc:
            raise BadInputError(
                f"{name} cannot be parsed: {exc}", code="invalid-phpunit-xml", field="phpunit-xml"
            ) from exc
    if root is None or root.tag != "phpunit":
        root = ET.Element("phpunit")
    for child in list(root):
        if child.tag not in ("php", "groups"):
            root.remove(child)
    if bootstrap:
        root.set("bootstrap", bootstrap)
    elif "bootstrap" in root.attrib:
        root.set("bootstrap", f"{plugin_dir}/{root.get('bootstrap', '').removeprefix('./')}")
    suites = ET.SubElement(root, "testsuites")
    suite = ET.SubElement(suites, "testsuite", {"name": "codebox-test-file"})
    ET.SubElement(suite, "file").text = test_file
    return '<?xml version="1.0"?>\n' + ET.tostring(root, encoding="unicode")


def suite_label(index: int, command: str = "wordpress.phpunit") -> str:
    """The name of the session's ``index``-th suite (1-based) in its test results and events."""
    return command if index == 1 else f"{command}:{index}"


def record_suite(
    session: CommandContext,
    outcome_type: Any,
    human: str,
    errors: str,
    *,
    junit: str | None,
    reason: str | None,
    mode: str,
    env: dict[str, str],
    command: str = "wordpress.phpunit",
) -> CommandOutcome:
    """Keep the raw output (and JUnit XML), add the suite to the session and describe the outcome."""
    index = len(session.test_suites) + 1
    name = suite_label(index, command)
    rel = layout.phpunit_path(index)
    raw_path = session.add_evidence(f"{rel}/output.txt", "test-output", "text/plain")
    raw_path.write_text(session.redact(human + ("\n" + errors if errors else "")), encoding="utf-8")
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
    if suite.tests == 0 and reason is None:
        reason = no_tests_reason(human + "\n" + errors)
    session.emit(
        "tests.finished",
        {
            "suite": name,
            "status": suite.status,
            "tests": suite.tests,
            "passed": suite.passed,
            "failed": suite.failed,
            "skipped": suite.skipped,
            **({"reason": reason} if reason else {}),
        },
        level="info" if suite.status in ("passed", "skipped") else "warning",
    )
    summary: dict[str, Any] = suite.model_dump(mode="json", exclude_none=True)
    summary["wordpress"] = mode
    if mode == "tests-lib":
        summary["toolchain"] = {k: v for k, v in env.items() if k.startswith("WP_")}
    if reason:
        summary["reason"] = reason
    stdout = human if not reason or suite.tests else (human + ("\n" if human else "") + "no tests ran: " + reason)
    return cast(
        "CommandOutcome",
        outcome_type(
            stdout=stdout,
            stderr=errors,
            exit_code=0 if suite.status == "passed" else 1,
            json=summary,
            artifact_refs=refs,
        ),
    )
