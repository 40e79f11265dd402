"""The run lifecycle's pure parts: which tools a request mounts, the checks before boot, RunControl."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from codebox_tui.contracts.runtime import RuntimePolicy
from codebox_tui.errors import BadInputError
from codebox_tui.lifecycle import CommandStep, RunControl, RunRequest, Toolchain, check_request, tool_mounts
from codebox_tui.lifecycle.tools import resolve_wp_cli_phar
from codebox_tui.runtime.commands import WP_CLI_DIR
from codebox_tui.settings import CodeboxSettings, get_settings


def test_tools_follow_the_commands_requested_else_the_policy() -> None:
    one = RunRequest(commands=[CommandStep("wordpress.phpunit", ["plugin-slug=x"])])
    assert one.wanted_tools() == ["wordpress.phpunit"]
    assert "wordpress.phpunit" in one.effective_policy().commands  # the default policy allows it
    stepwise = RunRequest(policy=RuntimePolicy(commands=["wordpress.run-php", "wordpress.wp-cli"]))
    assert stepwise.wanted_tools() == ["wordpress.run-php", "wordpress.wp-cli"]
    told = RunRequest(policy=RuntimePolicy(commands=["wordpress.phpunit"]), tool_commands=[])
    assert told.wanted_tools() == []


def test_wp_cli_phar_is_mounted_read_only_or_named_when_missing(tmp_path: Path) -> None:
    settings = get_settings()
    phar = tmp_path / "wp-cli.phar"
    phar.write_bytes(PHAR_HEAD)
    (mount,) = tool_mounts(["wordpress.wp-cli"], tmp_path / "tools", Toolchain(wp_cli_phar=phar), settings)
    assert (mount.target, mount.mode) == (WP_CLI_DIR, "readonly")
    assert (Path(mount.source) / "wp-cli.phar").read_bytes() == phar.read_bytes()  # a copy, not the file
    assert tool_mounts(["wordpress.run-php"], tmp_path / "none", Toolchain(wp_cli_phar=phar), settings) == []
    with pytest.raises(BadInputError) as caught:
        tool_mounts(["wordpress.wp-cli"], tmp_path / "t2", Toolchain(wp_cli_phar=tmp_path / "nope.phar"), settings)
    assert caught.value.code == "wp-cli-phar-missing" and "nope.phar" in caught.value.message


PHAR_HEAD = b"#!/usr/bin/env php\n<?php\nPhar::mapPhar();\n__HALT_COMPILER(); ?>\r\n\x00\x01"


def test_wp_cli_phar_that_is_not_a_phar_is_refused_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "wp-cli.phar"
    script.write_text("#!/bin/sh\necho not wp-cli\n")
    monkeypatch.setenv("CODEBOX_WP_CLI_PHAR", str(script))
    with pytest.raises(BadInputError) as caught:
        tool_mounts(["wordpress.wp-cli"], tmp_path / "tools", Toolchain(), CodeboxSettings())
    assert caught.value.code == "wp-cli-phar-invalid" and caught.value.field == "CODEBOX_WP_CLI_PHAR"
    assert str(script) in caught.value.message and "not a phar" in caught.value.message


def test_wp_on_path_is_used_when_no_phar_is_configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A maintainer's own WP-CLI: ``wp`` on PATH as a link to the phar, or as a wrapper running it; a ``wp``
    that is neither is not used (the command then says how to get one)."""
    monkeypatch.delenv("CODEBOX_WP_CLI_PHAR", raising=False)
    phar = tmp_path / "opt" / "wp-cli.phar"
    phar.parent.mkdir()
    phar.write_bytes(PHAR_HEAD)
    phar.chmod(0o755)  # installed as a command
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    assert resolve_wp_cli_phar(Toolchain(), CodeboxSettings()) is None  # nothing on PATH
    (bin_dir / "wp").symlink_to(phar)
    assert resolve_wp_cli_phar(Toolchain(), CodeboxSettings()) == phar.resolve()
    (bin_dir / "wp").unlink()
    (bin_dir / "wp").write_text(f"#!/bin/sh\nexec php '{phar}' \"$@\"\n")
    (bin_dir / "wp").chmod(0o755)
    assert resolve_wp_cli_phar(Toolchain(), CodeboxSettings()) == phar.resolve()
    (bin_dir / "wp").write_text("#!/bin/sh\necho 'some other wp'\n")
    assert resolve_wp_cli_phar(Toolchain(), CodeboxSettings()) is None
    (bin_dir / "wp").unlink()
    (bin_dir / "wp").symlink_to(phar)
    given = tmp_path / "given.phar"
    given.write_bytes(PHAR_HEAD)
    assert resolve_wp_cli_phar(Toolchain(wp_cli_phar=given), CodeboxSettings()) == given.resolve()  # flag first


def test_bad_input_fails_before_anything_boots(tmp_path: Path) -> None:
    with pytest.raises(BadInputError) as caught:
        check_request(RunRequest(php="5.6"))
    assert caught.value.code == "unknown-php-version"
    missing = str(tmp_path / "missing.php")
    with pytest.raises(BadInputError) as caught:
        check_request(RunRequest(commands=[CommandStep("wordpress.run-php", [f"code-file={missing}"])]))
    assert caught.value.code == "missing-code-file"
    with pytest.raises(BadInputError) as caught:
        check_request(RunRequest(commands=[CommandStep("wordpress.phpunit", [])]))
    assert caught.value.code == "missing-arg" and caught.value.field == "plugin-slug"
    with pytest.raises(BadInputError) as caught:
        check_request(RunRequest(preview_port=70000))
    assert caught.value.code == "invalid-port"


def test_run_control_cancels_once_and_ends_a_hold() -> None:
    control = RunControl()
    reasons: list[str] = []
    undo = control.on_cancel(reasons.append)
    assert not control.wait_released(0.01)
    waiter = threading.Thread(target=control.wait_released, args=(30,))
    waiter.start()
    control.cancel("stop")
    control.cancel("again")
    waiter.join(5)
    assert not waiter.is_alive() and control.cancelled and control.released
    assert reasons == ["stop"]
    late: list[str] = []
    control.on_cancel(late.append)  # after the cancel: called at once
    assert late == ["stop"]
    undo()
    fresh = RunControl()
    gone: list[str] = []
    fresh.on_cancel(gone.append)()  # undone before the cancel
    fresh.cancel()
    assert gone == [] and fresh.cancelled
