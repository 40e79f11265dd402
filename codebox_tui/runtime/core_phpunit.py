"""``wordpress.core-phpunit``: run WordPress core's own PHPUnit tests from a checkout on this machine.

The checkout (``core-root=``, a wordpress-develop clone or any folder with its ``tests/phpunit`` layout) is
checked before anything boots and mounted read-only into the sandbox (runtime/core_checkout.py). The tests run
against the sandbox's WordPress (``ABSPATH`` is ``/wordpress/``, not the checkout's ``src/``) under Debian's
PHPUnit, with the same test site, installer and test-result documents as ``wordpress.phpunit``
(runtime/phpunit.py): a test class that loads the core test library is run exactly as a plugin's
``WP_UnitTestCase`` suite is.
"""

from __future__ import annotations

import secrets
import xml.etree.ElementTree as ET
from pathlib import Path

from codebox_tui.contracts.runtime import MountSpec
from codebox_tui.errors import BadInputError
from codebox_tui.runtime import wp_tests
from codebox_tui.runtime.commands import sandbox_env
from codebox_tui.runtime.context import CommandContext
from codebox_tui.runtime.core_checkout import (
    COMMAND,
    CORE_POLYFILLS_TARGET,
    CORE_TESTS_TARGET,
    core_tests_wanted,
    polyfills_missing,
    test_file_target,
)
from codebox_tui.runtime.outcome import CommandOutcome
from codebox_tui.runtime.phpunit import (
    SANDBOX_BIN_DIR,
    no_tests_reason,
    prepare_test_site,
    record_suite,
    split_output,
    suite_label,
)
from codebox_tui.runtime.test_progress import TestTally, strip_log_lines


def core_config(test_file: str | None, core_tests: bool) -> str:
    """The PHPUnit configuration the suite runs under: the core test library's bootstrap, and the checkout's
    ``tests/`` folder (or the one file asked for)."""
    root = ET.Element(
        "phpunit",
        {"bootstrap": f"{CORE_TESTS_TARGET}/includes/bootstrap.php", "backupGlobals": "false", "colors": "false"},
    )
    if core_tests:
        php = ET.SubElement(root, "php")
        ET.SubElement(php, "const", {"name": "WP_RUN_CORE_TESTS", "value": "1"})
    suite = ET.SubElement(ET.SubElement(root, "testsuites"), "testsuite", {"name": "core"})
    if test_file:
        ET.SubElement(suite, "file").text = test_file
    else:
        ET.SubElement(suite, "directory", {"suffix": ".php"}).text = f"{CORE_TESTS_TARGET}/tests"
    return '<?xml version="1.0"?>\n' + ET.tostring(root, encoding="unicode")


def _mounted(session: CommandContext, kind: str, given: str) -> MountSpec | None:
    """The run's mount of ``kind`` made for the ``core-root=`` value ``given``."""
    return next(
        (
            m
            for m in session.spec.extra_mounts
            if (m.metadata or {}).get("toolchain") == kind and given in ((m.metadata or {}).get("given") or [])
        ),
        None,
    )


def _polyfills(session: CommandContext, given: str, root: Path) -> str:
    """The polyfills inside the sandbox: ``--phpunit-polyfills``/``WP_TESTS_PHPUNIT_POLYFILLS_PATH`` first, else
    the checkout's own Composer copy."""
    if any((m.metadata or {}).get("toolchain") == "phpunit-polyfills" for m in session.spec.extra_mounts):
        return wp_tests.POLYFILLS_TARGET
    if _mounted(session, "core-polyfills", given) is not None:
        return CORE_POLYFILLS_TARGET
    raise polyfills_missing(root)


def core_phpunit(session: CommandContext, args: dict[str, str], timeout_s: float) -> CommandOutcome:
    given = args.get("core-root", "")
    mount = _mounted(session, "core-tests", given)
    if mount is None:
        raise BadInputError(
            f"core-root {given!r} is not mounted in this sandbox: a run mounts the checkout its "
            f"{COMMAND} steps name before it boots (codebox run --command, a recipe step)",
            code="invalid-core-checkout",
            field="core-root",
        )
    root = Path((mount.metadata or {})["hostPath"])
    test_file = test_file_target(root, args["test-file"]) if args.get("test-file") else None
    core_tests = core_tests_wanted(root, args.get("core-tests", "auto"))
    env = {
        **sandbox_env(session),
        "WP_TESTS_DIR": CORE_TESTS_TARGET,
        "WP_PHPUNIT__DIR": CORE_TESTS_TARGET,
        "WP_PHPUNIT__TESTS_CONFIG": f"{SANDBOX_BIN_DIR}/{wp_tests.TESTS_CONFIG}",
        "WP_TESTS_SKIP_INSTALL": "1",
        "WP_TESTS_PHPUNIT_POLYFILLS_PATH": _polyfills(session, given, root),
    }
    installed, install_output = prepare_test_site(session, env, timeout_s, core_tests=core_tests)
    if not installed:
        return record_suite(
            session,
            CommandOutcome,
            "",
            install_output,
            junit=None,
            mode="tests-lib",
            env=env,
            command=COMMAND,
            reason="the WordPress test site could not be installed: " + no_tests_reason(install_output),
        )
    config_path = f"/tmp/codebox-core-phpunit-{secrets.token_hex(6)}.xml"
    session.sandbox.write_file(config_path, core_config(test_file, core_tests).encode("utf-8"), 30.0)
    argv = [
        "php",
        "-d",
        "include_path=.:/usr/share/php",
        "-d",
        f"auto_prepend_file={SANDBOX_BIN_DIR}/{wp_tests.TESTS_PRELUDE}",
        f"{SANDBOX_BIN_DIR}/phpunit",
        "--log-junit",
        "php://stdout",
        "--log-teamcity",
        "php://stderr",
        "--colors=never",
        "--do-not-cache-result",
        "-c",
        config_path,
    ]
    for name, flag in (("filter", "--filter"), ("group", "--group"), ("exclude-group", "--exclude-group")):
        if args.get(name):
            argv += [flag, args[name]]
    name = suite_label(len(session.test_suites) + 1, COMMAND)
    tally = TestTally(lambda counts: session.emit("tests.progress", {"suite": name, **counts.summary()}))
    result = session.sandbox.run_cli(argv, timeout_s, env=env, on_stderr=tally.feed)
    tally.finish()
    human, junit = split_output(result.text)
    return record_suite(
        session,
        CommandOutcome,
        install_output + "\n" + human,
        strip_log_lines(result.errors),
        junit=junit,
        reason=None,
        mode="tests-lib",
        env=env,
        command=COMMAND,
    )
