"""An output-only bundle on Home and in Review (docs/exec.md, "Nothing to decide"): real bundles captured from
real folders and recorded through the store's own `record_run`, one as an exec that changed nothing; the
Pilot presses keys from where the app opens, and every assertion about decisions is made on the store."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.home import HomeScreen
from codebox_tui.screens.review import ReviewScreen
from store.db import OUTPUT_ONLY_STATUS, Store
from store.inbox import record_run
from tests.factories.bundles import make_bundle, typical_change
from tests.factories.widget_hosts import wait_for
from widgets.decision_bar import DecisionBar


def _record(tmp_path: Path, store: Store, name: str, *, changed: bool) -> int:
    (tmp_path / name).mkdir()
    summary, _ = make_bundle(tmp_path / name, typical_change if changed else (lambda _source: None))
    record = record_run(
        run_id=f"runtime-{name}",
        run_dir=summary.path,
        status="completed",
        bundle_dir=summary.path,
        metadata={"flow": "exec"},
        bundle_id=summary.id,
        content_digest=summary.content_digest_b,
        changed_files=len(summary.changed_files),
        output_only=not changed,
        store=store,
    )
    assert record is not None
    return record.key


def _row_keys(app: CodeboxApp) -> list[int]:
    return [int(str(row.key.value)) for row in app.screen.query_one(DataTable).ordered_rows]


async def test_output_only_row_is_labelled_never_pending_and_its_keys_say_why(tmp_path: Path, store: Store) -> None:
    quiet = _record(tmp_path, store, "quiet", changed=False)
    wrote = _record(tmp_path, store, "wrote", changed=True)
    assert store.get_bundle_by_key(quiet).status == OUTPUT_ONLY_STATUS
    app = CodeboxApp()
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen) and len(_row_keys(app)) == 2, timeout=60)
        table = app.screen.query_one(DataTable)
        row = table.get_row(str(quiet))
        assert [str(c) for c in row][-2] == "output only"
        assert [str(c) for c in table.get_row(str(wrote))][-2] == "—"
        await pilot.press("f")  # all → pending: the output-only bundle awaits no decision
        await pilot.pause()
        assert _row_keys(app) == [wrote]
        for _ in range(5):  # pending → … → output-only, the last filter
            await pilot.press("f")
        await pilot.pause()
        assert app.screen.status_filter == "output-only" and _row_keys(app) == [quiet]
        await pilot.press("D")  # discard: the key says why it cannot act, and no dialog opens
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        assert any(f"@{quiet} is output only" in n.message for n in app._notifications)
        await pilot.press("enter")  # its output can still be read
        await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen), timeout=60)
        bar = app.screen.query_one(DecisionBar)
        assert "output only: nothing to decide" in str(bar.render())
        for key in ("a", "d", "i"):
            await pilot.press(key)
            await pilot.pause()
            assert isinstance(app.screen, ReviewScreen), key  # no confirmation, no reason dialog
    assert store.list_decisions(quiet) == []
    assert store.get_bundle_by_key(quiet).status == OUTPUT_ONLY_STATUS
