"""Contained-site handles through the real CLI (docs/sites.md): `codebox site create` prepares a site from its
inputs and keeps its snapshot, the same caller and inputs give the same `site_id` without booting again, `site
status` is `recoverable` / `miss` (read-only, idempotent), `site list` and Home list it, `site rm` deletes it;
`site open` boots it again from its snapshot with a held preview, on the backend that prepared it (native and
Playground each once).
The handle and status documents validate against their generated JSON Schemas.

One native sandbox prepares the site the first tests share (in its own `codebox` process; the queries after it go
through the real entry point in the test's process, tests/factories/holds.py); the open test prepares one on
Playground through the entry point in process (the session's warm sidecar) and opens it in a `codebox` process of
its own. Every home links the session's WordPress builds, so nothing is built cold."""

from __future__ import annotations

import json
import shutil
import signal
import urllib.request
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from codebox_tui.contracts.schemas import generate_json_schema
from codebox_tui.contracts.site import CONTAINED_SITE_SCHEMA, CONTAINED_SITE_STATUS_SCHEMA
from tests.factories.held import HeldCommand, codebox, free_port
from tests.factories.holds import codebox_in_process, linked_home
from tests.factories.native import recorded_backend

BLUEPRINT = {
    "siteOptions": {"blogname": "Prepared site"},
    "steps": [{"step": "writeFile", "path": "/wordpress/wp-content/uploads/prepared.txt", "data": "kept"}],
}


def _inputs(tmp: Path) -> tuple[Path, Path]:
    plugin = tmp / "tiny"
    plugin.mkdir()
    (plugin / "tiny.php").write_text("<?php\n/* Plugin Name: Tiny */\n")
    blueprint = tmp / "blueprint.json"
    blueprint.write_text(json.dumps(BLUEPRINT))
    return plugin, blueprint


def _valid(schema_id: str, document: Any) -> Any:
    jsonschema.Draft202012Validator(generate_json_schema(schema_id)).validate(document)
    return document


def _create(home: Path, plugin: Path, blueprint: Path, *extra: str, in_process: bool = True) -> Any:
    args = (
        "site",
        "create",
        "--backend",
        "native",
        "--mount",
        f"{plugin}:/wordpress/wp-content/plugins/tiny:readonly",
        "--blueprint",
        str(blueprint),
        "--json",
        *extra,
    )
    return codebox_in_process(home, *args) if in_process else codebox(home, *args)


def _serves_the_prepared_site(where: str) -> None:
    """The opened site is the snapshot's: its title and a file the blueprint wrote before the snapshot."""
    with urllib.request.urlopen(where + "/?rest_route=/", timeout=120) as response:
        assert json.loads(response.read())["name"] == "Prepared site"  # not a fresh site's
    with urllib.request.urlopen(where + "/wp-content/uploads/prepared.txt", timeout=120) as response:
        assert response.read() == b"kept"


class Prepared:
    """The site the native tests share: its home, inputs and the `site create` that prepared it."""

    def __init__(self, home: Path, plugin: Path, blueprint: Path) -> None:
        self.home, self.plugin, self.blueprint = home, plugin, blueprint
        self.created = self.create(in_process=False)  # the first one in a `codebox` process of its own
        assert self.created.returncode == 0, self.created.stdout + self.created.stderr
        self.doc = json.loads(self.created.stdout)

    def create(self, *extra: str, in_process: bool = True) -> Any:
        return _create(self.home, self.plugin, self.blueprint, *extra, in_process=in_process)


@pytest.fixture(scope="module")
def prepared(codebox_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Prepared:
    tmp = tmp_path_factory.mktemp("site")
    plugin, blueprint = _inputs(tmp)
    return Prepared(linked_home(codebox_home, tmp), plugin, blueprint)


@pytest.mark.native
def test_create_returns_a_stable_handle_and_keeps_the_prepared_site(prepared: Prepared) -> None:
    doc = _valid(CONTAINED_SITE_SCHEMA, prepared.doc)
    site_id, digest = doc["site_id"], doc["source_digest"]["value"]
    assert doc["recovery"]["input"] == {"cache_key": site_id, "source_digest": digest}
    assert "ready: WordPress" in prepared.created.stderr  # it booted a sandbox to prepare the site
    again = prepared.create()  # the same caller and inputs: the same site, kept, nothing booted
    assert again.returncode == 0 and json.loads(again.stdout) == doc, again.stderr
    assert "boot:" not in again.stderr
    other_caller = prepared.create("--caller", "studio")
    other = json.loads(other_caller.stdout)
    assert other["site_id"] != site_id and other["source_digest"] == doc["source_digest"]
    kept = prepared.home / "sites" / site_id
    assert (kept / "site.json").is_file() and (kept / "snapshot.json").is_file()
    snapshot = json.loads((kept / "snapshot.json").read_text())
    options = {
        row["option_name"]: row["option_value"]
        for table in snapshot["database"]["tables"]
        if table["name"].endswith("options")
        for row in table["rows"]
    }
    assert options["blogname"] == "Prepared site"  # the blueprint ran before the snapshot
    assert "uploads/prepared.txt" in {entry["path"] for entry in snapshot["files"]}
    assert not any(entry["path"].startswith("plugins/tiny") for entry in snapshot["files"])  # read-only mount


@pytest.mark.native
def test_changed_inputs_give_another_source_digest(prepared: Prepared, tmp_path: Path) -> None:
    """`site status --source-digest` of the inputs as they are now says whether the kept site still matches."""
    (prepared.plugin / "tiny.php").write_text("<?php\n/* Plugin Name: Tiny, changed */\n")
    try:
        changed = prepared.create()  # prepares another site (a second native boot: 0.3 s)
        assert changed.returncode == 0, changed.stderr
        digest = json.loads(changed.stdout)["source_digest"]["value"]
        assert digest != prepared.doc["source_digest"]["value"]
        stale = codebox_in_process(
            prepared.home, "site", "status", prepared.doc["site_id"], "--source-digest", digest, "--json"
        )
        assert stale.returncode == 1 and json.loads(stale.stdout)["status"] == "miss"
    finally:
        (prepared.plugin / "tiny.php").write_text("<?php\n/* Plugin Name: Tiny */\n")


@pytest.mark.native
def test_status_is_recoverable_read_only_and_idempotent(prepared: Prepared) -> None:
    site_id = prepared.doc["site_id"]
    kept = prepared.home / "sites" / site_id
    before = {p: p.stat().st_mtime_ns for p in kept.rglob("*")}
    answers = [codebox_in_process(prepared.home, "site", "status", site_id, "--json") for _ in range(2)]
    assert [a.returncode for a in answers] == [0, 0]
    assert answers[0].stdout == answers[1].stdout
    status = _valid(CONTAINED_SITE_STATUS_SCHEMA, json.loads(answers[0].stdout))
    assert status["status"] == "recoverable" and status["site_id"] == site_id
    assert status["blueprint_ref"]["ref"] == f"prepared:{site_id}:{prepared.doc['source_digest']['value']}"
    assert {p: p.stat().st_mtime_ns for p in kept.rglob("*")} == before
    listed = codebox_in_process(prepared.home, "site", "list", "--json")
    assert site_id in [row["site_id"] for row in json.loads(listed.stdout)]
    missing = codebox_in_process(prepared.home, "site", "status", "prepared-0000000000000000", "--json")
    assert missing.returncode == 1 and json.loads(missing.stdout)["status"] == "miss"
    malformed = codebox_in_process(prepared.home, "site", "status", "../../etc", "--json")
    assert malformed.returncode == 2 and json.loads(malformed.stdout)["error"]["code"] == "invalid-site-id"


@pytest.mark.native
def test_rm_deletes_the_site_and_status_then_misses(prepared: Prepared, tmp_path: Path) -> None:
    # on a copy of the home, so the other tests keep theirs
    home = tmp_path / "home"
    shutil.copytree(prepared.home / "sites", home / "sites")
    site_id = prepared.doc["site_id"]
    removed = codebox_in_process(home, "site", "rm", site_id)
    assert removed.returncode == 0, removed.stderr
    assert not (home / "sites" / site_id).exists()
    status = codebox_in_process(home, "site", "status", site_id, "--json")
    assert status.returncode == 1 and json.loads(status.stdout)["status"] == "miss"
    assert codebox_in_process(home, "site", "rm", site_id).returncode == 1


@pytest.mark.native
def test_a_natively_prepared_site_opens_natively_and_is_released(prepared: Prepared) -> None:
    """The snapshot records the host's full PHP version and the site its series: they match, so the site is
    restored into a fresh native sandbox and served; `codebox release` from another process (this one, through the
    real entry point: tests/factories/holds.py; a `codebox release` process of its own is test_release_held's)
    ends the hold."""
    port = free_port()
    held = HeldCommand(
        prepared.home, "site", "open", prepared.doc["site_id"], "--hold", "10m", "--preview-port", str(port)
    )
    try:
        where, runtime_id = held.wait_held()
        assert where == f"http://127.0.0.1:{port}"
        _serves_the_prepared_site(where)
        released = codebox_in_process(prepared.home, "release", runtime_id)
        assert released.returncode == 0, released.stderr
        assert held.wait_exit() == 0, held.stderr
    finally:
        held.kill()
    bundle, events = held.bundle_events()
    kinds = [e["type"] for e in events]
    assert kinds.index("runtime.snapshot-restored") < kinds.index("runtime.held")  # restored before it was served
    assert recorded_backend(bundle) == "native"


@pytest.mark.native
async def test_home_lists_the_prepared_sites(prepared: Prepared, monkeypatch: pytest.MonkeyPatch) -> None:
    from textual.widgets import Static

    from codebox_tui.app import CodeboxApp
    from codebox_tui.settings import reload_settings
    from tests.factories.widget_hosts import wait_for

    monkeypatch.setenv("CODEBOX_HOME", str(prepared.home))
    reload_settings()
    try:
        app = CodeboxApp()
        async with app.run_test(size=(140, 40)) as pilot:
            await wait_for(
                pilot,
                lambda: (
                    bool(app.screen.query("#home-sites"))
                    and not app.screen.query_one("#home-sites").has_class("hidden")
                ),
                timeout=60,
            )
            text = str(app.screen.query_one("#home-sites", Static).render())
            assert prepared.doc["site_id"] in text and "codebox site open" in text
    finally:
        monkeypatch.undo()
        reload_settings()


@pytest.mark.playground
@pytest.mark.timeout(900)  # two Playground boots (prepare, then open) on a shared machine
def test_open_boots_the_site_again_from_its_snapshot_and_holds_it(playground_session: Any, tmp_path: Path) -> None:
    plugin, blueprint = _inputs(tmp_path)
    home = linked_home(playground_session.home, tmp_path)
    # prepared in this process, on the session's warm sidecar; opened below in a `codebox` process of its own
    created = codebox_in_process(
        home,
        "site",
        "create",
        "--backend",
        "playground",
        "--blueprint",
        str(blueprint),
        "--mount",
        f"{plugin}:/wordpress/wp-content/plugins/tiny",
        "--json",
    )
    assert created.returncode == 0, created.stderr
    site_id = json.loads(created.stdout)["site_id"]
    port = free_port()
    held = HeldCommand(home, "site", "open", site_id, "--hold", "10m", "--preview-port", str(port))
    try:
        where, runtime_id = held.wait_held()
        assert where == f"http://127.0.0.1:{port}"
        _serves_the_prepared_site(where)
        assert runtime_id.startswith("runtime-")
        assert held.release(signal.SIGTERM) == 0, held.stderr
    finally:
        held.kill()
    bundle, events = held.bundle_events()
    kinds = [e["type"] for e in events]
    assert kinds.index("runtime.snapshot-restored") < kinds.index("runtime.held")  # restored before it was served
    assert recorded_backend(bundle) == "wordpress-playground"
