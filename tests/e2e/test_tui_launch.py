"""Pilot, end to end: the launch form starts a real sandbox in a worker, the live screen tails its events, the
bundle lands in the real store, and `r` opens it for review. The form starts on the native backend here (the
`CODEBOX_BACKEND` setting its Backend field starts from; real PHP in real bubblewrap, several times cheaper in
CI); each bundle is checked to have run there. The screen's flows do not depend on the backend: Playground's
held preview is test_runtime_cli.py's `boot --hold`, a Launch run on Playground test_run_parity.py's. A Launch with
a hold (the preview served until `c` closes it, then nothing listens there) is test_exec.py's
test_tui_console_on_a_held_preview, whose held run also drives the console."""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.live_run import LiveRunScreen
from codebox_tui.screens.review import ReviewScreen
from codebox_tui.settings import get_settings
from store.db import Store
from tests.factories.parity import backend_setting, recorded_backend_option
from tests.factories.tui import review_opened, submit_launch_form, wait_while
from widgets.event_tail import EventTail
from widgets.file_tree import ChangedFileTree

pytestmark = pytest.mark.native


@pytest.fixture(autouse=True)
def on_native() -> Iterator[str]:
    """Every Launch form of the module starts on the native backend."""
    with backend_setting("native") as name:
        yield name


async def test_launch_form_runs_a_real_sandbox_and_offers_its_bundle(
    plugin_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the working folder does not matter: runs go to the one default root
    code = (
        "$d = WP_PLUGIN_DIR . '/simple-plugin';"
        'file_put_contents("$d/from-launch.php", "<?php\\n// launched from the TUI\\n"); echo \'ok\';'
    )
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        live = await submit_launch_form(
            app,
            pilot,
            mounts=f"{plugin_copy}:/wordpress/wp-content/plugins/simple-plugin:readwrite",
            args=shlex.quote(f"code={code}"),
        )
        assert isinstance(live, LiveRunScreen), live.query_one("#launch-error").render()
        await wait_while(lambda: live.state == "starting")  # boot + command + capture
        assert live.state == "done", live.query_one("#progress").render()
        await wait_while(lambda: live.query_one(EventTail).total < 4, 10)  # the tail polls the file
        tail = live.query_one(EventTail)
        assert tail.total >= 4
        assert live.bundle_dir is not None and (live.bundle_dir / "files" / "patch.diff").exists()
        assert recorded_backend_option(live.bundle_dir) == "native"
        await pilot.press("r")
        assert isinstance(await review_opened(pilot), ReviewScreen)  # verified in a worker first
        assert "from-launch.php" in app.screen.query_one(ChangedFileTree).file_paths
    store = Store.open(get_settings().db_path)
    try:
        paths = [Path(b.path).resolve() for b in store.list_bundles()]
    finally:
        store.close()
    assert live.bundle_dir.resolve() in paths
    assert live.bundle_dir.resolve().parent == get_settings().artifacts_dir.resolve()  # like `codebox run`
    assert not (tmp_path / "artifacts").exists()
    # copy-on-write: the sandbox's file is in the bundle; the folder changes only through apply-back
    assert (
        live.bundle_dir / "files" / "mounts" / "0" / "from-launch.php"
    ).read_text() == "<?php\n// launched from the TUI\n"
    assert not (plugin_copy / "from-launch.php").exists()


async def test_launch_form_runs_a_recipe_and_offers_its_bundle() -> None:
    recipe = Path(__file__).resolve().parents[2] / "examples" / "recipes" / "plugin-scaffold-mutation.json"
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        live = await submit_launch_form(app, pilot, recipe=str(recipe))
        assert isinstance(live, LiveRunScreen), live.query_one("#launch-error").render()
        await wait_while(lambda: live.state == "starting")
        assert live.state == "done", live.query_one("#progress").render()
        await wait_while(lambda: live.query_one(EventTail).total < 4, 10)
        assert live.query_one(EventTail).total >= 4  # the recipe's own session events were tailed
        assert live.bundle_dir is not None
        assert (live.bundle_dir / "files" / "run-attestation.json").exists()
        assert recorded_backend_option(live.bundle_dir) == "native"
        await pilot.press("r")
        assert isinstance(await review_opened(pilot), ReviewScreen)  # verified in a worker first
        assert any(rel.endswith("feature.php") for rel in app.screen.query_one(ChangedFileTree).file_paths)
    store = Store.open(get_settings().db_path)
    try:
        runs = {r.run_id: r for r in store.list_runs()}
        bundles = [Path(b.path).resolve() for b in store.list_bundles()]
    finally:
        store.close()
    assert live.bundle_dir.resolve() in bundles
    assert live.session is not None and runs[live.session.runtime_id].status == "completed"


async def test_launch_form_runs_an_episode_plan_and_shows_its_steps_as_they_happen() -> None:
    """The Recipe field takes an episode plan too (docs/episodes.md): the Live run tails the episode's events
    while it runs, and the bundle carries the episode trace."""
    import json

    plan = Path(__file__).resolve().parents[2] / "examples" / "episode" / "plan.json"
    app = CodeboxApp()
    seen_running: set[str] = set()
    async with app.run_test(size=(120, 40)) as pilot:
        live = await submit_launch_form(app, pilot, recipe=str(plan))
        assert isinstance(live, LiveRunScreen), live.query_one("#launch-error").render()
        for _ in range(3000):  # up to 300 s: boot, eight items, capture
            if live.state != "starting":
                break
            for tail in live.query(EventTail):
                for i in range(tail.total):
                    seen_running.add(str(json.loads(tail.index.read_line(i)).get("type")))
            await asyncio.sleep(0.1)
        assert live.state == "done", live.query_one("#progress").render()
        assert {"episode.reset", "episode.step", "episode.snapshot", "episode.restore"} <= seen_running
        assert live.bundle_dir is not None and recorded_backend_option(live.bundle_dir) == "native"
        trace = json.loads((live.bundle_dir / "files" / "runtime-episode-trace.json").read_text())
        assert [s["index"] for s in trace["steps"]] == list(range(len(trace["steps"])))
        assert len(trace["steps"]) == 3
