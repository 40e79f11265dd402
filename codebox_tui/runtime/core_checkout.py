"""A ``wordpress.core-phpunit`` step's WordPress core checkout (``core-root=``): checked before anything boots
(:func:`check_core_step`) and mounted read-only into the sandbox (:func:`core_checkout_mounts`; the tests at
:data:`CORE_TESTS_TARGET`, the checkout's Composer-installed PHPUnit Polyfills at :data:`CORE_POLYFILLS_TARGET`).
Apart from the command's handler (runtime/core_phpunit.py), which the command catalog loads only when the
command runs."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from codebox_tui.contracts.runtime import MountSpec
from codebox_tui.errors import BadInputError
from codebox_tui.jsonargs import resolve_source
from codebox_tui.runtime import wp_tests
from codebox_tui.runtime.wp_tests import ToolchainMissingError

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


def test_file_target(root: Path, value: str) -> str:
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


def core_tests_wanted(root: Path, value: str) -> bool:
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
        test_file_target(root, args["test-file"])
    core_tests_wanted(root, args.get("core-tests", "auto"))
    in_checkout = (root / POLYFILLS_REL / wp_tests.POLYFILLS_FILE).is_file()
    if not in_checkout and wp_tests.find_host_polyfills(polyfills) is None:
        raise polyfills_missing(root)


def polyfills_missing(root: Path) -> ToolchainMissingError:
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
