"""Home as a review inbox (#15): real bundles captured from real folders, recorded in the real store; the
Pilot drives the screen and every assertion about a decision is made on the store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from textual.widgets import DataTable, Static

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.dialogs import ConfirmDialog
from codebox_tui.screens.home import HomeScreen, shorten_middle
from store.db import Store
from store.decisions import decide_on, register_bundle
from store.inbox import describe_bundle, inbox_rows, select_rows
from tests.factories.bundles import make_bundle, typical_change
from tests.factories.tui import confirm_ready
from tests.factories.widget_hosts import wait_for


def _bundle(tmp_path: Path, name: str) -> Path:
    (tmp_path / name).mkdir()
    summary, _ = make_bundle(tmp_path / name, typical_change)
    return summary.path


def _add(bundle: Path, rel: str, doc: Any) -> None:
    """A file the capture of another flow would have written (added after the record: never decided on)."""
    (bundle / rel).parent.mkdir(parents=True, exist_ok=True)
    (bundle / rel).write_text(json.dumps(doc))


def _inbox(tmp_path: Path, store: Store) -> dict[str, Any]:
    """Four bundles: a plain run, an evaluate-patch, a recipe with a warning, an imported one; the plain
    run is approved and then applied."""
    paths = {name: _bundle(tmp_path, name) for name in ("plain", "patch", "recipe", "imported")}
    records = {
        name: register_bundle(store, path, origin="import" if name == "imported" else "run")
        for name, path in paths.items()
    }
    decide_on(store, records["plain"], "approve", approver="alice")
    store.set_bundle_status(records["plain"].key, "applied")
    _add(
        paths["patch"],
        "files/evaluate-patch.json",
        {
            "plugin": "buggy-counter",
            "patch": "fix-spaces.patch",
            "tests": {
                "verdict": "improvement",
                "before": {"status": "failed", "tests": 2, "passed": 1, "failed": 1},
                "after": {"status": "passed", "tests": 2, "passed": 2, "failed": 0},
            },
        },
    )
    _add(
        paths["recipe"],
        "files/run-attestation.json",
        {
            "recipe": {"path": "examples/recipes/bug-reproduction.json"},
            "stepFailures": [],
            "probes": [],
            "advisoryFailures": [{"phase": "steps", "index": 1, "command": "c", "error": "expect failed"}],
            "executions": [],
        },
    )
    return {"paths": paths, "keys": {name: r.key for name, r in records.items()}}


def _table_keys(app: CodeboxApp) -> list[int]:
    table = app.screen.query_one(DataTable)
    return [int(str(row.key.value)) for row in table.ordered_rows]


def test_rows_say_source_title_verdict_and_delta(tmp_path: Path, store: Store) -> None:
    made = _inbox(tmp_path, store)
    rows = {r.key: r for r in inbox_rows(store)}
    keys = made["keys"]
    patch, recipe = rows[keys["patch"]], rows[keys["recipe"]]
    assert (patch.source, patch.title, patch.verdict, patch.delta) == (
        "evaluate-patch",
        "buggy-counter + fix-spaces",
        "improvement",
        "1/2 → 2/2",
    )
    assert (recipe.source, recipe.title, recipe.verdict, recipe.warnings) == ("recipe", "bug-reproduction", "passed", 1)
    plain, imported = rows[keys["plain"]], rows[keys["imported"]]
    assert (plain.source, plain.status, plain.decision) == ("run", "applied", "approve")
    assert imported.source == "imported" and imported.title == "plugin"  # the mount's folder name
    assert plain.risk_flags == describe_bundle(store.get_bundle_by_key(keys["plain"])).risk_flags
    # the `approved` filter shows the approved bundle although its status reads `applied`
    assert [r.key for r in select_rows(list(rows.values()), status="approved")] == [keys["plain"]]
    assert [r.key for r in select_rows(list(rows.values()), status="pending", text="BUGGY fix")] == [keys["patch"]]
    by_title = [r.title for r in select_rows(list(rows.values()), sort="title")]
    assert by_title == sorted(by_title, key=str.lower)


def test_a_long_title_keeps_its_start_and_end() -> None:
    assert shorten_middle("buggy-counter + buggy-counter-fix.patch", 16) == "buggy-cou….patch"
    assert len(shorten_middle("x" * 100, 16)) == 16
    assert shorten_middle("short", 16) == "short"


async def test_filter_search_and_sort_on_home(tmp_path: Path, store: Store) -> None:
    made = _inbox(tmp_path, store)
    keys = made["keys"]
    app = CodeboxApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        assert sorted(_table_keys(app)) == sorted(keys.values())
        await pilot.press("f", "f")  # all → pending → approved
        await pilot.pause()
        assert app.screen.status_filter == "approved"
        assert _table_keys(app) == [keys["plain"]]
        status = str(app.screen.query_one("#home-status", Static).render())
        assert "1 of 4 bundle(s)" in status and "filter: approved" in status
        await pilot.press("f", "f", "f", "f", "f")  # back to all
        await pilot.press("slash", *"eval", "enter")
        await pilot.pause()
        assert _table_keys(app) == [keys["patch"]]
        table = app.screen.query_one(DataTable)
        cells = [str(c) for c in table.get_row_at(0)]
        assert cells[1:4] == ["eval", "improvement", "1/2→2/2"]
        width = table.ordered_columns[0].width
        assert width >= 16 and cells[0] == shorten_middle("buggy-counter + fix-spaces", width)
        assert cells[0].startswith("buggy-c") and cells[0].endswith("spaces")
        await pilot.press("escape")
        await pilot.pause()
        newest = _table_keys(app)
        await pilot.press("s")  # newest → oldest
        await pilot.pause()
        assert app.screen.sort == "oldest" and _table_keys(app) == newest[::-1]


async def test_bulk_discard_confirms_and_records_one_decision_per_bundle(tmp_path: Path, store: Store) -> None:
    made = _inbox(tmp_path, store)
    keys = made["keys"]
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        table = app.screen.query_one(DataTable)
        targets = {keys["plain"], keys["imported"]}
        for key in targets:
            table.move_cursor(row=_table_keys(app).index(key))
            await pilot.press("space")
            await pilot.pause()
        assert app.screen.selected == targets
        await pilot.press("D")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ConfirmDialog)
        body = str(dialog.query_one("#confirm-body", Static).render())
        assert "Discard 2 bundle(s)?" in body
        assert f"@{keys['plain']}" in body and "already applied" in body  # the applied one warns first
        assert store.list_decisions(keys["imported"]) == []  # nothing recorded before the confirmation
        await pilot.press("y")
        await pilot.pause()
        for key in targets:
            decisions = store.list_decisions(key)
            assert decisions[-1].action == "discard" and decisions[-1].approver
            assert store.get_bundle_by_key(key).status == "discarded"
        assert store.get_bundle_by_key(keys["patch"]).status == "pending"
        assert not app.screen.selected


async def test_bulk_discard_can_be_cancelled(tmp_path: Path, store: Store) -> None:
    made = _inbox(tmp_path, store)
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("D", "n")  # the highlighted bundle only; then cancel
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        assert all(store.get_bundle_by_key(k).status in ("pending", "applied") for k in made["keys"].values())


async def test_review_warns_before_a_new_decision_on_a_discarded_bundle(tmp_path: Path, store: Store) -> None:
    bundle = _bundle(tmp_path, "b")
    record = register_bundle(store, bundle)
    decide_on(store, record, "discard", approver="alice")
    app = CodeboxApp(bundle)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("a")
        await wait_for(pilot, lambda: confirm_ready(app), timeout=60)  # the warning comes with the verification
        assert isinstance(app.screen, ConfirmDialog)
        body = str(app.screen.query_one("#confirm-body", Static).render())
        assert body.startswith("⚠ This bundle was already discarded")


def test_patch_titles_drop_the_repeated_plugin_name() -> None:
    from store.inbox import _patch_title

    assert _patch_title("buggy-counter", "buggy-counter-fix.patch") == "buggy-counter + fix"
    assert _patch_title("word-stats", "fatal.diff") == "word-stats + fatal"
    assert _patch_title("p", "p.patch") == "p + p"


def test_a_vanished_or_hostile_bundle_folder_still_gets_a_row(tmp_path: Path, store: Store) -> None:
    import shutil

    made = _inbox(tmp_path, store)
    shutil.rmtree(made["paths"]["imported"])
    _add(made["paths"]["recipe"], "files/run-attestation.json", {"recipe": {"path": "evil\x1b]0;x\x07.json"}})
    rows = {r.key: r for r in inbox_rows(store)}
    gone = rows[made["keys"]["imported"]]
    assert gone.source == "imported" and gone.verdict == "no tests" and gone.title == "run"
    assert rows[made["keys"]["recipe"]].title == "evil\\x1b]0;x\\x07"


async def test_keys_typed_into_the_search_are_text_not_commands(tmp_path: Path, store: Store) -> None:
    _inbox(tmp_path, store)
    app = CodeboxApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("slash", "s", "f", "q", "n", "D", "space", "x")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, HomeScreen) and app.is_running
        assert screen.search == "sfqnD x" and screen.sort == "newest" and screen.status_filter == "all"
        assert _table_keys(app) == []  # nothing matches; the status line says so
        assert "nothing matches" in str(screen.query_one("#home-status", Static).render())
        await pilot.press("escape")
        await pilot.pause()
        assert screen.search == "" and len(_table_keys(app)) == 4


def test_an_agent_task_bundle_is_labelled_as_one(tmp_path: Path, store: Store) -> None:
    path = _bundle(tmp_path, "agent")
    record = register_bundle(store, path)
    _add(
        path,
        "files/task-input.json",
        {"schema": "wp-codebox/task-input/v1", "goal": 'replace "Hello" with\n"Howdy" in the greeting'},
    )
    row = describe_bundle(record)
    assert row.source == "agent"
    assert row.title == 'plugin · agent: replace "Hello" with "Howdy" in the greeting'


async def test_at_140_columns_verdict_tests_and_risk_stay_whole_and_the_title_takes_the_rest(
    tmp_path: Path, store: Store
) -> None:
    made = _inbox(tmp_path, store)
    long_name = "a-plugin-with-a-rather-long-folder-name-that-maintainers-really-have"
    _add(
        made["paths"]["patch"],
        "files/evaluate-patch.json",
        {
            "plugin": long_name,
            "patch": "0001-escape-the-attachment-link-text.patch",
            "tests": {
                "verdict": "plugin-broken",
                "before": {"status": "failed", "tests": 26, "passed": 25, "failed": 1},
                "after": {"status": "failed", "tests": 26, "passed": 12, "failed": 14},
            },
        },
    )
    app = CodeboxApp()
    async with app.run_test(size=(140, 30)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        table = app.screen.query_one(DataTable)
        row = table.get_row(str(made["keys"]["patch"]))
        assert [str(c) for c in row[2:4]] == ["plugin-broken", "25/26→12/26"]
        title = str(row[0])
        assert title.startswith("a-plugin-with-a-rather-long") and title.endswith("attachment-link-text")
        widths = {str(c.key.value): c.width for c in table.columns.values()}
        assert widths["title"] >= 140 - sum(w for k, w in widths.items() if k != "title") - 2 * 9 - 2
