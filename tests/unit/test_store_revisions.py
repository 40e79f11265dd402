"""Revisions of one review: links (explicit and automatic), interdiff from the two patches, comments carried
over and marked outdated, verdict/test data per revision. Real captured bundles, a real SQLite store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from codebox_tui.errors import BadInputError
from store.comments import add_comment
from store.db import BundleRecord, Store
from store.decisions import decide_on, register_bundle
from store.revisions import bundle_interdiff, carried_comments, interdiff, link, previous, revisions
from tests.factories.bundles import make_bundle, second_try, typical_change


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    db = Store.open(tmp_path / "db.sqlite3")
    yield db
    db.close()


def _bundle(tmp_path: Path, store: Store, name: str, mutate, run_id: str | None = None) -> BundleRecord:  # type: ignore[no-untyped-def]
    (tmp_path / name).mkdir()
    summary, _ = make_bundle(tmp_path / name, mutate)
    return register_bundle(store, summary.path, run_id=run_id)


def test_explicit_link_interdiff_and_comments_carried_over(tmp_path: Path, store: Store) -> None:
    first = _bundle(tmp_path, store, "one", typical_change)
    kept = add_comment(store, first, path="plugin.php", kind="note", body="context line", author="ana", line_start=19)
    changed = add_comment(
        store, first, path="plugin.php", kind="issue", body="keep lower case", author="ana", line_start=21
    )
    on_dropped = add_comment(store, first, path="readme.txt", kind="issue", body="why delete?", author="ana")
    decide_on(store, first, "iterate", approver="ana", reason="see comments")
    second = _bundle(tmp_path, store, "two", second_try)
    assert previous(store, second) is None
    link(store, second, first)

    chain = revisions(store, first)
    assert [(r.number, r.bundle.key, r.how) for r in chain] == [(1, first.key, None), (2, second.key, "explicit")]
    assert chain[0].decision is not None and chain[0].decision.action == "iterate"
    assert chain[1].decision is None
    assert [r.bundle.key for r in revisions(store, second)] == [first.key, second.key]

    files = {f.path: f for f in bundle_interdiff(first, second)}
    assert files["added.php"].change == "unchanged" and files["added.php"].lines == []
    assert files["readme.txt"].change == "dropped-in-revision"
    plugin = files["plugin.php"]
    assert plugin.change == "changed"
    assert "-+<?php // LINE twenty" in plugin.lines and "++<?php // line twenty" in plugin.lines
    assert "++<?php // line five" in plugin.lines

    carried = {c.id: c for c in carried_comments(store, second)}
    assert set(carried) == {kept.id, changed.id, on_dropped.id}
    assert carried[kept.id].outdated is False  # line 19 reads the same
    assert carried[changed.id].outdated is True  # line 21 changed again
    assert carried[on_dropped.id].outdated is True  # the file is no longer changed
    assert carried_comments(store, first) == []


def test_link_refuses_loops_and_self(tmp_path: Path, store: Store) -> None:
    first = _bundle(tmp_path, store, "one", typical_change)
    second = _bundle(tmp_path, store, "two", second_try)
    with pytest.raises(BadInputError):
        link(store, first, first)
    link(store, second, first)
    with pytest.raises(BadInputError, match="loop"):
        link(store, first, second)


def test_automatic_links_by_sandbox_session_and_by_plugin_and_task(tmp_path: Path, store: Store) -> None:
    store.record_run("run-a", status="succeeded", artifacts_dir=tmp_path, sandbox_session_id="s-1")
    store.record_run("run-b", status="succeeded", artifacts_dir=tmp_path, sandbox_session_id="s-1")
    store.record_run("run-c", status="succeeded", artifacts_dir=tmp_path, metadata={"plugin": "p", "task": "t"})
    store.record_run("run-d", status="succeeded", artifacts_dir=tmp_path, metadata={"plugin": "p", "task": "t"})
    store.record_run("run-e", status="succeeded", artifacts_dir=tmp_path, metadata={"plugin": "p", "task": "other"})
    a = _bundle(tmp_path, store, "a", typical_change, "run-a")
    c = _bundle(tmp_path, store, "c", typical_change, "run-c")
    b = _bundle(tmp_path, store, "b", second_try, "run-b")
    d = _bundle(tmp_path, store, "d", second_try, "run-d")
    e = _bundle(tmp_path, store, "e", second_try, "run-e")
    assert [(r.bundle.key, r.how) for r in revisions(store, a)] == [(a.key, None), (b.key, "session")]
    assert [(r.bundle.key, r.how) for r in revisions(store, d)] == [(c.key, None), (d.key, "task")]
    assert [r.bundle.key for r in revisions(store, e)] == [e.key]


def test_interdiff_of_identical_patches_is_empty() -> None:
    patch = "diff --git a/x.php b/x.php\n--- a/x.php\n+++ b/x.php\n@@ -1,1 +1,1 @@\n-a\n+b\n"
    assert [(f.path, f.change, f.lines) for f in interdiff(patch, patch)] == [("x.php", "unchanged", [])]
