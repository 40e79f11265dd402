"""Every catalog command runs the same way from `codebox run` and from the Launch screen
(Pilot, the real TUI): same status and exit codes, same command results, same bundle files, both runs in
the review inbox. Both go through the one run lifecycle (docs/architecture.md, "Runtime API"); this is
what caught `wordpress.phpunit` failing with `phpunit-missing` from the TUI while `codebox run` passed
(the TUI never added the PHPUnit tool mounts).

Every command runs on the native backend (real PHP in real bubblewrap, several times cheaper in CI): what is
compared — the request, its tool mounts, the lifecycle, the bundle — is built before and after the backend, by
the same code for both (docs/backends.md; tool mounts: lifecycle/tools.py). One command also runs on Playground,
so the Launch screen's own sidecar is compared with the CLI's; the backends' own parity is test_backend_parity.py's.

The Playground case runs `codebox run` in a process of its own (its own sidecar); the native cases call the same
entry point in the test's process (tests/factories/holds.py's codebox_in_process: exit codes, stdout and stderr as a
process gives them), which saves a new process's imports per case (docs/performance.md, "Test suite")."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.app import CodeboxApp
from codebox_tui.runtime.catalog import command_catalog
from codebox_tui.screens.live_run import LiveRunScreen
from codebox_tui.settings import get_settings, reload_settings
from store.db import Store
from tests.factories.holds import codebox_in_process
from tests.factories.parity import backend_setting, recorded_backend_option
from tests.factories.paths import REPO
from tests.factories.toolchains import WP_CLI_PHAR, core_checkout, require
from tests.factories.tui import submit_launch_form, wait_while

pytestmark = [pytest.mark.playground, pytest.mark.native]

PLUGIN = REPO / "examples" / "plugins-for-recipes" / "shortcode-demo"
TARGET = "/wordpress/wp-content/plugins/shortcode-demo"
# a minimal valid argument set for every command that needs no input beyond the example plugin
ARGS: dict[str, list[str]] = {
    "inspect-mounted-inputs": [],
    "wordpress.run-php": ["code=echo get_option('blogname');"],
    "wordpress.wp-cli": ["command=option get siteurl"],
    "wordpress.ability": ["name=demo/none"],
    "wordpress.phpunit": ["plugin-slug=shortcode-demo", "test-file=tests/GreetTest.php"],
    # TMP: the test's own folder, where a minimal core checkout is made (tests/factories/toolchains.py)
    "wordpress.core-phpunit": ["core-root=TMP/wordpress-develop"],
    "wordpress.browser-probe": ["url=/"],
    # the 10 s default step timeout is too short for a first page load while two pytest workers share 2 cores
    "wordpress.browser-actions": ['steps-json=[{"action": "navigate", "url": "/"}]', "step-timeout=60s"],
    "wordpress.capture-state-bundle": ["sections=summary,options", "snapshot-exclude-wp-content=themes"],
    "wp-codebox.checkpoint-create": ["name=before", "snapshot-exclude-wp-content=themes"],
    "wp-codebox.checkpoint-list": [],
    # a fresh sandbox has no checkpoint: both sides must refuse it the same way
    "wp-codebox.checkpoint-restore": ["name=missing"],
    "wp-codebox.observe": ['spec-json={"paths": ["/wordpress/wp-config.php"]}', "type=files"],
    "wordpress.bench": ["path=/", "count=1", "warmup=0"],
}
CORE_TEST = """<?php
class Tests_Codebox_Site extends WP_UnitTestCase {
    public function test_the_site_has_a_name() {
        $this->assertNotSame( '', get_option( 'blogname' ) );
    }
}
"""
RUNNABLE = [c.id for c in command_catalog().commands if c.handler != "policy-only"]
# (command, backend): every command natively, and one on Playground (the Launch screen's in-process sidecar against
# the CLI's own); a command needing nothing but PHP, as the backend is all that differs there
CASES = [*((command, "native") for command in RUNNABLE), ("wordpress.run-php", "playground")]


def test_every_runnable_catalog_command_has_an_argument_set() -> None:
    assert sorted(ARGS) == sorted(RUNNABLE)  # a new command must join the parity test


@pytest.fixture
def wp_cli_phar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """WP-CLI's release phar (../shared/toolchains) configured the way a user without a --wp-cli-phar flag
    does it (CODEBOX_WP_CLI_PHAR), for both the child process and this one."""
    require(WP_CLI_PHAR)
    phar = WP_CLI_PHAR
    monkeypatch.setenv("CODEBOX_WP_CLI_PHAR", str(phar))
    reload_settings()
    yield phar
    monkeypatch.delenv("CODEBOX_WP_CLI_PHAR")
    reload_settings()  # CODEBOX_HOME is untouched: still the session's


def _bundle_view(bundle: Path) -> dict[str, Any]:
    """What must match between the two sides, without ids, timings, ports or output text."""
    manifest = json.loads((bundle / "manifest.json").read_text())
    results = []
    for line in (bundle / "commands.jsonl").read_text().splitlines():
        item = json.loads(line)
        envelope = item.get("result") or {}
        results.append(
            (item["command"], item["exitCode"], envelope.get("status"), (envelope.get("error") or {}).get("code"))
        )
    return {"files": sorted(_without_ids(f["path"]) for f in manifest["files"]), "commands": results}


def _without_ids(path: str) -> str:
    """Snapshot documents are named by a random id and their file blobs by content hash (which includes
    files the site writes at run time, such as its cache): keep only the kind of each path."""
    path = re.sub(r"runtime-snapshot-[0-9a-f]+", "runtime-snapshot-ID", path)
    path = re.sub(r"(wordpress-state/)[^/]+$", r"\1ID.json", path)
    return re.sub(r"(runtime-snapshots/blobs/)[0-9a-f]{64}$", r"\1BLOB", path)


async def _launch(command: str, mount: str, args: list[str]) -> tuple[str, Path | None, str]:
    """``command`` through the Launch form of the real TUI (Pilot): the live run's final state, bundle and run id."""
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        live = await submit_launch_form(
            app, pilot, command=command, mounts=mount, args=" ".join(shlex.quote(a) for a in args)
        )
        assert isinstance(live, LiveRunScreen), live.query_one("#launch-error").render()
        await wait_while(lambda: live.state == "starting", 300)
        return live.state, live.bundle_dir, live.session.runtime_id


def _run_status(run_id: str) -> str:
    store = Store.open(get_settings().db_path)
    try:
        return next(r.status for r in store.list_runs() if r.run_id == run_id)
    finally:
        store.close()


@pytest.mark.parametrize(("command", "backend"), [pytest.param(*case, id=f"{case[0]}@{case[1]}") for case in CASES])
def test_command_runs_the_same_from_the_cli_and_the_launch_screen(
    command: str, backend: str, wp_cli_phar: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if backend == "playground":
        request.getfixturevalue("playground_session")  # the session's warm sidecar, as the TUI's
    with backend_setting(backend):
        _run_both_ways_and_compare(command, backend, tmp_path)


def _run_both_ways_and_compare(command: str, backend: str, tmp_path: Path) -> None:
    """``command`` through `codebox run` (see the module's docstring) and the Launch form, both on ``backend`` (the
    setting, which the form's Backend field starts from); their outcomes and bundles compared."""
    plugin = tmp_path / "shortcode-demo"
    shutil.copytree(PLUGIN, plugin)
    mount = f"{plugin}:{TARGET}:readonly"
    args = [arg.replace("core-root=TMP", f"core-root={tmp_path}") for arg in ARGS[command]]
    if command == "wordpress.core-phpunit":
        core_checkout(tmp_path / "wordpress-develop", {"site.php": CORE_TEST})

    run_args = ["run", "--mount", mount, "--command", command, *[p for arg in args for p in ("--arg", arg)]]
    if backend == "playground":  # a `codebox` process of its own, with its own sidecar
        cli = subprocess.run(
            [sys.executable, "-m", "codebox_tui", *run_args, "--json", "--quiet"],
            cwd=tmp_path,
            env=dict(os.environ),
            capture_output=True,
            text=True,
            timeout=600,
        )
    else:  # the same entry point in this process (tests/factories/holds.py), before any event loop runs, as in a process
        cli = codebox_in_process(get_settings().home, *run_args, "--json", "--quiet")
    doc = json.loads(cli.stdout)
    cli_bundle = Path(doc["artifacts"]["directory"])
    tui_state, tui_bundle, tui_run = asyncio.run(_launch(command, mount, args))

    assert tui_bundle is not None, cli.stderr
    assert (tui_state == "done") == doc["success"], (tui_state, doc.get("error"), doc.get("execution"))
    assert (cli.returncode == 0) == doc["success"]
    assert _bundle_view(tui_bundle) == _bundle_view(cli_bundle)
    assert recorded_backend_option(tui_bundle) == recorded_backend_option(cli_bundle) == backend
    assert _run_status(tui_run) == _run_status(cli_bundle.name) == ("completed" if doc["success"] else "failed")
