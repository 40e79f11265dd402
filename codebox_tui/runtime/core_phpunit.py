"""``wordpress.core-phpunit``: run WordPress core's own PHPUnit tests from a checkout on this machine.

The checkout (``core-root=``, a wordpress-develop clone or any folder with its ``tests/phpunit`` layout) is
checked before anything boots (:func:`check_core_step`); its ``tests/phpunit`` folder is mounted read-only at
:data:`CORE_TESTS_TARGET` and, when the checkout has them, its Composer-installed PHPUnit Polyfills at
:data:`CORE_POLYFILLS_TARGET` (:func:`core_checkout_mounts`). The tests run against the sandbox's WordPress
(``ABSPATH`` is ``/wordpress/``, not the checkout's ``src/``) under Debian's PHPUnit, with the same test site,
installer and test-result documents as ``wordpress.phpunit`` (runtime/phpunit.py): a test class that loads the
core test library is run exactly as a plugin's ``WP_UnitTestCase`` suite is.
"""

from __future__ import annotations

import secrets
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path

from codebox_tui.contracts.runtime import MountSpec
from codebox_tui.errors import BadInputError
from codebox_tui.jsonargs import resolve_source
from codebox_tui.runtime import wp_tests
from codebox_tui.runtime.commands import sandbox_env
from codebox_tui.runtime.context import CommandContext
from codebox_tui.runtime.outcome import CommandOutcome
from codebox_tui.runtime.phpunit import (
    SANDBOX_BIN_DIR,
    ToolchainMissingError,
    no_tests_reason,
    prepare_test_site,
    record_suite,
    split_output,
    suite_label,
)
from codebox_tui.runtime.test_progress import TestTally, strip_log_lines

COMMAND = "wordpress.core-phpunit"
TESTS_REL = "tests/phpunit"
POLYFILLS_REL = "vendor/yoast/phpunit-polyfills"
CORE_TESTS_TARGET = "/codebox-core-tests"
CORE_POLYFILLS_TARGET = "/codebox-core-polyfills"
CORE_TESTS_CHOICES = ("auto", "on", "off")
EXPECTED = (
    f"a WordPress core checkout: a folder whose {TESTS_REL}/ holds the core test library ("
    + ", ".join(f"includes/{Path(name).name}" for name in wp_tests.LIB_FILES)
    + ") and the tests in tests/"
)


def core_checkout(value: str | None, base_dir: Path | None = None) -> Path:
    """The checkout ``core-root=`` names (relative to ``base_dir``, a recipe's folder, else the current directory),
    resolved; bad input naming the argument and what was expected when it is missing or not a checkout."""
    if not value or not value.strip():
        raise BadInputError(
            f"{COMMAND} needs core-root=DIR: {EXPECTED}",
            code="missing-arg",
            field="core-root",
            details={"expected": EXPECTED},
        )
    root = resolve_source(base_dir or Path.cwd(), value).resolve()
    if not root.is_dir():
        raise BadInputError(
            f"core-root {value!r} is not a folder on this machine; expected {EXPECTED}",
            code="invalid-core-checkout",
            field="core-root",
            details={"expected": EXPECTED},
        )
    tests = root / TESTS_REL
    missing = [f"{TESTS_REL}/{name}" for name in wp_tests.LIB_FILES if not (tests / name).is_file()]
    if not (tests / "tests").is_dir():
        missing.append(f"{TESTS_REL}/tests/")
    if missing:
        raise BadInputError(
            f"core-root {value!r} is not a WordPress core checkout: missing "
            + ", ".join(missing)
            + f"; expected {EXPECTED}",
            code="invalid-core-checkout",
            field="core-root",
            details={"missing": missing, "expected": EXPECTED},
        )
    return root


def _test_file(root: Path, value: str) -> str:
    """``test-file=`` (relative to the checkout, under ``tests/phpunit/``) as a path inside the sandbox."""
    parts = Path(value).parts
    if value.startswith("/") or ".." in parts or Path(*parts[:2]) != Path(TESTS_REL) or len(parts) < 3:
        raise BadInputError(
            f"test-file {value!r} must be a path inside the checkout under {TESTS_REL}/, e.g. "
            f"{TESTS_REL}/tests/option/option.php",
            code="invalid-arg",
            field="test-file",
        )
    if not (root / value).is_file():
        raise BadInputError(
            f"test-file {value!r} is not a file of the checkout {root}", code="invalid-arg", field="test-file"
        )
    return f"{CORE_TESTS_TARGET}/{Path(*parts[2:]).as_posix()}"


def _core_tests(root: Path, value: str) -> bool:
    """Whether ``WP_RUN_CORE_TESTS`` is set: ``auto`` sets it for a full checkout (one with ``tests/phpunit/data``,
    which core's own tests read), as wordpress-develop's phpunit.xml.dist does."""
    if value not in CORE_TESTS_CHOICES:
        raise BadInputError(
            f"core-tests must be one of {', '.join(CORE_TESTS_CHOICES)}, got {value!r}",
            code="invalid-arg",
            field="core-tests",
        )
    return value == "on" or (value == "auto" and (root / TESTS_REL / "data").is_dir())


def check_core_step(args: dict[str, str], base_dir: Path | None = None, polyfills: Path | None = None) -> None:
    """Everything about a ``wordpress.core-phpunit`` step that can be known wrong before anything boots: the
    checkout, the file asked for, and the polyfills (``polyfills``: ``--phpunit-polyfills``)."""
    root = core_checkout(args.get("core-root"), base_dir)
    if args.get("test-file"):
        _test_file(root, args["test-file"])
    _core_tests(root, args.get("core-tests", "auto"))
    in_checkout = (root / POLYFILLS_REL / wp_tests.POLYFILLS_FILE).is_file()
    if not in_checkout and wp_tests.find_host_polyfills(polyfills) is None:
        raise _polyfills_missing(root)


def _polyfills_missing(root: Path) -> ToolchainMissingError:
    return ToolchainMissingError(
        "WordPress's core test library needs the Yoast PHPUnit Polyfills, which were not found; looked in: "
        f"--phpunit-polyfills DIR, $WP_TESTS_PHPUNIT_POLYFILLS_PATH, {root / POLYFILLS_REL}",
        code="phpunit-polyfills-missing",
        field="--phpunit-polyfills",
        details={
            "hint": "pass --phpunit-polyfills DIR, set WP_TESTS_PHPUNIT_POLYFILLS_PATH, or run composer "
            "install in the checkout"
        },
    )


def core_checkout_mounts(steps: Iterable[tuple[str, dict[str, str]]], base_dir: Path | None = None) -> list[MountSpec]:
    """Read-only mounts of the checkout a run's ``wordpress.core-phpunit`` steps name (one checkout a run), each
    tagged with the ``core-root=`` value it was given for (the step finds its checkout by that value)."""
    given = {
        args.get("core-root", ""): core_checkout(args.get("core-root"), base_dir)
        for command, args in steps
        if command == COMMAND
    }
    if not given:
        return []
    if len(set(given.values())) > 1:
        raise BadInputError(
            f"{COMMAND} steps of one run must name one core-root, got "
            + ", ".join(sorted(map(str, set(given.values())))),
            code="invalid-arg",
            field="core-root",
        )
    root = next(iter(given.values()))
    tags = {"hostPath": str(root), "given": sorted(given)}
    mounts = [
        MountSpec(
            source=str(root / TESTS_REL),
            target=CORE_TESTS_TARGET,
            mode="readonly",
            captureArtifacts=False,
            metadata={"toolchain": "core-tests", **tags},
        )
    ]
    if (root / POLYFILLS_REL / wp_tests.POLYFILLS_FILE).is_file():
        mounts.append(
            MountSpec(
                source=str(root / POLYFILLS_REL),
                target=CORE_POLYFILLS_TARGET,
                mode="readonly",
                captureArtifacts=False,
                metadata={"toolchain": "core-polyfills", **tags},
            )
        )
    return mounts


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
    raise _polyfills_missing(root)


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
    test_file = _test_file(root, args["test-file"]) if args.get("test-file") else None
    core_tests = _core_tests(root, args.get("core-tests", "auto"))
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
