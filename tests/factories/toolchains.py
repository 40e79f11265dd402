"""The third-party toolchains the project's tests use the way a maintainer's own copies are used: the
WordPress core PHPUnit library, the PHPUnit Polyfills and WP-CLI's release phar. They live beside the
repository in ``../shared/toolchains`` (in CI a clean clone sits next to ``shared/``), never inside it.
A test that cannot find them fails loudly: CI has them, so a skip would hide a broken set-up."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.factories.paths import REPO


def toolchains_dir() -> Path:
    """``<repo>/../shared/toolchains`` (for a git worktree nested deeper, the nearest ancestor's
    ``shared/toolchains``); ``CODEBOX_TOOLCHAINS`` overrides."""
    if os.environ.get("CODEBOX_TOOLCHAINS"):
        return Path(os.environ["CODEBOX_TOOLCHAINS"])
    for parent in REPO.parents:
        if (parent / "shared" / "toolchains").is_dir():
            return parent / "shared" / "toolchains"
    return REPO.parent / "shared" / "toolchains"


TOOLCHAINS = toolchains_dir()
WP_TESTS_LIB = TOOLCHAINS / "wp-tests-lib-6.5.5"
PHPUNIT_POLYFILLS = TOOLCHAINS / "phpunit-polyfills-1.1.4"
WP_CLI_PHAR = TOOLCHAINS / "wp-cli-2.9.0" / "wp-cli.phar"


def require(*files: Path) -> None:
    """Fail the calling test (never skip it) when a toolchain file is missing."""
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        pytest.fail(
            "the shared test toolchains are missing (expected beside the repository in "
            f"../shared/toolchains, see its README): {', '.join(missing)}"
        )


def core_checkout(folder: Path, tests: dict[str, str]) -> Path:
    """A minimal WordPress core checkout in ``folder``: ``tests/phpunit/includes`` is a copy of the shared core
    test library, ``vendor/yoast/phpunit-polyfills`` of the shared polyfills (as ``composer install`` leaves
    them in wordpress-develop), and ``tests/phpunit/tests/<name>`` holds each of ``tests``."""
    require(WP_TESTS_LIB / "includes" / "bootstrap.php", PHPUNIT_POLYFILLS / "phpunitpolyfills-autoload.php")
    shutil.copytree(WP_TESTS_LIB / "includes", folder / "tests" / "phpunit" / "includes")
    shutil.copytree(PHPUNIT_POLYFILLS, folder / "vendor" / "yoast" / "phpunit-polyfills")
    for name, source in tests.items():
        path = folder / "tests" / "phpunit" / "tests" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    return folder
