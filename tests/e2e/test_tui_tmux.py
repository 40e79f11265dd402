"""End to end: a real run changes a read-write plugin mount, its bundle is registered in the real store, and the
real ``codebox tui`` is driven through tmux (own socket, real terminal, stdout not redirected) from Home to Review
to an approval that the store records. The run is on the native backend (real PHP in bubblewrap; what the TUI
shows is read from the bundle, whatever the backend), and the bundle says so."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from codebox_tui.settings import get_settings
from store.db import Store
from tests.factories.native import native_run, recorded_backend
from tests.factories.tmux import Tmux

pytestmark = [pytest.mark.native, pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")]

CODEBOX = Path(sys.executable).parent / "codebox"


def test_approve_a_real_native_bundle_in_the_real_tui(
    plugin_copy: Path, tmux: Tmux, codebox_home: Path, tmp_path: Path
) -> None:
    from codebox_tui.screens import data

    code = (
        "$d = WP_PLUGIN_DIR . '/simple-plugin';"
        'file_put_contents("$d/tui-added.php", "<?php\\n// added in the sandbox for the TUI test\\n");'
        "echo 'changed';"
    )
    with native_run(
        tmp_path / "artifacts",
        mounts=[f"{plugin_copy}:/wordpress/wp-content/plugins/simple-plugin"],
        commands=["wordpress.run-php"],
    ) as run:
        result = run.execute("wordpress.run-php", [f"code={code}"])
        assert result.exitCode == 0, result.stderr
        summary = run.capture()
    assert recorded_backend(summary.path) == "native"
    store = Store.open(get_settings().db_path)
    try:
        record = data.register(store, summary.path, run_id=run.runtime_id)
        before = len(store.list_decisions(record.bundle_id))
    finally:
        store.close()

    env = {
        "CODEBOX_HOME": str(codebox_home),
        "TEXTUAL_ANIMATIONS": "none",
        "TERM": "xterm-256color",
        "COLORTERM": "truecolor",
    }
    args = [arg for key, value in env.items() for arg in ("-e", f"{key}={value}")]
    tmux.run("new-session", "-d", "-s", "tui", "-x", "120", "-y", "40", *args, f"{CODEBOX} tui; sleep 30")

    short = record.bundle_id.removeprefix("artifact-bundle-sha256-")[:16]
    tmux.wait_for(lambda text: "bundle(s)" in text, "the inbox on Home")
    # the inbox shows titles, not ids: find this run's bundle by its id with the search
    tmux.run("send-keys", "-t", "tui", "/")
    tmux.wait_for(lambda text: "every word must match" in text, "the search field")
    tmux.run("send-keys", "-t", "tui", "-l", short)
    tmux.wait_for(lambda text: f"search: {short}" in text, "the search narrowing to the bundle")
    tmux.run("send-keys", "-t", "tui", "Enter")
    tmux.run("send-keys", "-t", "tui", "Enter")
    tmux.wait_for(lambda text: "tui-added.php" in text, "the review screen with the changed file")
    tmux.run("send-keys", "-t", "tui", "a")
    tmux.wait_for(lambda text: "Record (y)" in text, "the confirmation dialog")
    tmux.run("send-keys", "-t", "tui", "y")
    tmux.wait_for(lambda text: "Apply decision" in text, "the apply offer")
    tmux.run("send-keys", "-t", "tui", "Escape")

    store = Store.open(get_settings().db_path)
    try:
        decisions = store.list_decisions(record.bundle_id)
    finally:
        store.close()
    assert len(decisions) == before + 1
    decision = decisions[-1]
    assert decision.action == "approve"
    assert "tui-added.php" in (decision.approved_relative_paths or [])
    # nothing was applied: the plugin folder is copy-on-write, so the sandbox's file is only in the bundle
    assert not (plugin_copy / "tui-added.php").exists()
    assert (summary.path / "files" / "mounts" / "0" / "tui-added.php").exists()
