"""The one place that decides which host tools a run mounts (read-only), from the commands it runs.

``wordpress.wp-cli`` and the exec shell's ``wp`` get the wp-cli.phar (``Toolchain.wp_cli_phar``, else
the ``wp_cli_phar`` setting, else the phar behind a ``wp`` on ``PATH``; none at all leaves the command
to say how to provide one); ``wordpress.phpunit`` and ``wordpress.core-phpunit`` get
Debian's PHPUnit, its bootstrap helpers and, when this machine has them, the WordPress core test
library and the PHPUnit Polyfills (``runtime/phpunit.py``, ``runtime/wp_tests.py``). Every caller of
the run lifecycle gets the same mounts for the same commands (docs/architecture.md, "Runtime API").
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

from codebox_tui.contracts.runtime import MountSpec
from codebox_tui.errors import BadInputError
from codebox_tui.lifecycle.request import Toolchain
from codebox_tui.runtime.commands import WP_CLI_DIR, WP_CLI_HINT
from codebox_tui.runtime.phpunit import phpunit_tool_mounts
from codebox_tui.settings import CodeboxSettings

# A phar begins with its stub, which ends in this call (WP-CLI's: a ``#!/usr/bin/env php`` line, then a
# few lines of PHP); the stub is small, so the first bytes of the file hold it.
PHAR_STUB_END = b"__HALT_COMPILER();"
STUB_WINDOW = 64 * 1024
# A shell wrapper installed as ``wp`` (distribution packages, hand-made ones): ``exec php /path/wp-cli.phar``.
WRAPPED_PHAR = re.compile(rb"""(?:^|[\s'"=])(/[^\s'"$`;|&<>]+\.phar)(?=[\s'"]|$)""", re.MULTILINE)


def is_phar(path: Path) -> bool:
    """Whether ``path`` is a regular file that starts with a phar stub."""
    try:
        with path.open("rb") as handle:
            head = handle.read(STUB_WINDOW)
    except OSError:
        return False
    return path.is_file() and PHAR_STUB_END in head


def _phar_on_path() -> Path | None:
    """The WP-CLI phar behind a ``wp`` on ``PATH`` (a maintainer's own install): the file itself when
    ``wp`` (after its symlinks) is the phar, else the phar a short shell wrapper runs; None otherwise."""
    found = shutil.which("wp")
    if found is None:
        return None
    target = Path(found).resolve()
    if is_phar(target):
        return target
    try:
        with target.open("rb") as handle:
            text = handle.read(STUB_WINDOW)
    except OSError:
        return None
    if not text.startswith(b"#!"):
        return None
    for match in WRAPPED_PHAR.finditer(text):
        candidate = Path(os.fsdecode(match.group(1))).resolve()
        if is_phar(candidate):
            return candidate
    return None


def resolve_wp_cli_phar(tools: Toolchain, settings: CodeboxSettings) -> Path | None:
    """The host wp-cli.phar to mount: ``--wp-cli-phar`` (``Toolchain.wp_cli_phar``), else the
    ``CODEBOX_WP_CLI_PHAR`` setting, else the phar behind a ``wp`` on ``PATH``; None when there is none
    (the command then says how to get one, :data:`~codebox_tui.runtime.commands.WP_CLI_HINT`). A
    configured path that is not a phar is bad input naming it."""
    configured = tools.wp_cli_phar if tools.wp_cli_phar is not None else settings.wp_cli_phar
    if configured is None:
        return _phar_on_path()
    field = "wp-cli-phar" if tools.wp_cli_phar is not None else "CODEBOX_WP_CLI_PHAR"
    path = Path(configured).expanduser()
    if not path.is_file():
        raise BadInputError(
            f"{field}: wp-cli.phar not found at {path}",
            code="wp-cli-phar-missing",
            field=field,
            details={"hint": WP_CLI_HINT},
        )
    if not is_phar(path):
        raise BadInputError(
            f"{field}: {path} is not a phar (no phar stub in its first bytes); expected WP-CLI's wp-cli.phar",
            code="wp-cli-phar-invalid",
            field=field,
            details={"hint": WP_CLI_HINT},
        )
    return path.resolve()


def tool_mounts(commands: Iterable[str], scratch: Path, tools: Toolchain, settings: CodeboxSettings) -> list[MountSpec]:
    """Read-only mounts of the tools ``commands`` need, staged under ``scratch`` (the caller removes it
    when the run ends). Raises a structured error naming a tool that is required but missing
    (``phpunit-missing``, ``wp-cli-phar-missing``)."""
    wanted = set(commands)
    mounts: list[MountSpec] = []
    if "wordpress.wp-cli" in wanted:
        phar = resolve_wp_cli_phar(tools, settings)
        if phar is not None:
            folder = scratch / "wp-cli"
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copy2(phar, folder / "wp-cli.phar")
            mounts.append(
                MountSpec(
                    source=str(folder),
                    target=WP_CLI_DIR,
                    mode="readonly",
                    captureArtifacts=False,
                    metadata={"toolchain": "wp-cli"},
                )
            )
    if wanted & {"wordpress.phpunit", "wordpress.core-phpunit"}:
        mounts.extend(
            phpunit_tool_mounts(
                scratch / "phpunit-bin", wp_tests_lib=tools.wp_tests_lib, phpunit_polyfills=tools.phpunit_polyfills
            )
        )
    return mounts
