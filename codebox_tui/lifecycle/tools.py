"""The one place that decides which host tools a run mounts (read-only), from the commands it runs.

``wordpress.wp-cli`` gets the wp-cli.phar (``Toolchain.wp_cli_phar``, else the ``wp_cli_phar``
setting; none at all leaves the command to say how to provide one); ``wordpress.phpunit`` gets
Debian's PHPUnit, its bootstrap helpers and, when this machine has them, the WordPress core test
library and the PHPUnit Polyfills (``runtime/phpunit.py``, ``runtime/wp_tests.py``). Every caller of
the run lifecycle gets the same mounts for the same commands (docs/architecture.md, "Runtime API").
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

from codebox_tui.contracts.runtime import MountSpec
from codebox_tui.errors import BadInputError
from codebox_tui.lifecycle.request import Toolchain
from codebox_tui.settings import CodeboxSettings


def resolve_wp_cli_phar(tools: Toolchain, settings: CodeboxSettings) -> Path | None:
    """The host wp-cli.phar to mount, or None when none is configured; a configured path that is not a
    file is bad input naming it."""
    phar = tools.wp_cli_phar if tools.wp_cli_phar is not None else settings.wp_cli_phar
    if phar is None:
        return None
    path = Path(phar).expanduser()
    if not path.is_file():
        raise BadInputError(f"wp-cli.phar not found at {path}", code="wp-cli-phar-missing", field="wp-cli-phar")
    return path.resolve()


def tool_mounts(commands: Iterable[str], scratch: Path, tools: Toolchain, settings: CodeboxSettings
                ) -> list[MountSpec]:
    """Read-only mounts of the tools ``commands`` need, staged under ``scratch`` (the caller removes it
    when the run ends). Raises a structured error naming a tool that is required but missing
    (``phpunit-missing``, ``wp-cli-phar-missing``)."""
    from codebox_tui.runtime.commands import WP_CLI_DIR

    wanted = set(commands)
    mounts: list[MountSpec] = []
    if "wordpress.wp-cli" in wanted:
        phar = resolve_wp_cli_phar(tools, settings)
        if phar is not None:
            folder = scratch / "wp-cli"
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copy2(phar, folder / "wp-cli.phar")
            mounts.append(MountSpec(source=str(folder), target=WP_CLI_DIR, mode="readonly", captureArtifacts=False,
                                    metadata={"toolchain": "wp-cli"}))
    if "wordpress.phpunit" in wanted:
        from codebox_tui.runtime.phpunit import phpunit_tool_mounts

        mounts.extend(phpunit_tool_mounts(scratch / "phpunit-bin", wp_tests_lib=tools.wp_tests_lib,
                                          phpunit_polyfills=tools.phpunit_polyfills))
    return mounts
