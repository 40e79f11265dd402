"""Review comments and exported feedback, on a real captured bundle and a real SQLite store."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from codebox_tui.bundle.verify import verify_bundle
from codebox_tui.contracts.schemas import FEEDBACK_SCHEMA, generate_json_schema
from codebox_tui.errors import BadInputError, ConflictError
from store.comments import add_comment, delete_comment, edit_comment, list_comments, open_comments
from store.db import BundleRecord, Store
from store.decisions import decide_on, register_bundle
from store.feedback import FEEDBACK_JSON, FEEDBACK_MD, export_feedback, record_iterate_feedback
from tests.factories.bundles import make_bundle, typical_change


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    db = Store.open(tmp_path / "db.sqlite3")
    yield db
    db.close()


@pytest.fixture
def bundle(tmp_path: Path, store: Store) -> BundleRecord:
    summary, _ = make_bundle(tmp_path, typical_change)
    return register_bundle(store, summary.path)


def test_line_range_and_file_comments_are_stored_with_the_content_digest(store: Store, bundle: BundleRecord) -> None:
    line = add_comment(
        store, bundle, path="plugin.php", kind="issue", body="Keep the lower case.", author="ana", line_start=21
    )
    ranged = add_comment(
        store,
        bundle,
        path="plugin.php",
        kind="suggestion",
        body="Tidy this block.",
        author="ana",
        line_start=19,
        line_end=23,
    )
    old = add_comment(
        store, bundle, path="plugin.php", kind="note", body="Was fine.", author="ana", line_start=21, side="old"
    )
    whole = add_comment(store, bundle, path="added.php", kind="praise", body="Nice file.", author="ana")
    assert line.content_digest == bundle.content_digest and line.bundle_key == bundle.key
    assert line.lines == ["<?php // LINE twenty"]
    assert ranged.lines == [f"<?php // line {i}" for i in (18, 19)] + ["<?php // LINE twenty"] + [
        f"<?php // line {i}" for i in (21, 22)
    ]
    assert old.lines == ["<?php // line 20"] and old.where() == "plugin.php:21 (old)"
    assert whole.side == "file" and whole.line_start is None and whole.where() == "added.php"
    assert [c.id for c in list_comments(store, bundle.key)] == [whole.id, ranged.id, line.id, old.id]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"path": "nope.php"}, "file"),
        ({"path": "plugin.php", "line_start": 1}, "line"),  # line 1 is not shown in the diff
        ({"path": "plugin.php", "line_start": 23, "line_end": 21}, "line"),
        ({"path": "plugin.php", "kind": "blocker"}, "type"),
        ({"path": "plugin.php", "body": "  "}, "body"),
        ({"path": "plugin.php", "line_start": 21, "side": "left"}, "side"),
    ],
)
def test_bad_comments_are_refused_naming_the_field(
    store: Store, bundle: BundleRecord, kwargs: dict, field: str
) -> None:
    args = {"kind": "issue", "body": "text", "author": "ana"} | kwargs
    with pytest.raises(BadInputError) as caught:
        add_comment(store, bundle, **args)
    assert caught.value.field == field
    assert list_comments(store, bundle.key) == []


def test_edit_and_delete(store: Store, bundle: BundleRecord) -> None:
    c = add_comment(store, bundle, path="plugin.php", kind="issue", body="one", author="ana", line_start=21)
    changed = edit_comment(store, c.id, body="two", kind="note")
    assert (changed.body, changed.kind) == ("two", "note")
    assert list_comments(store, bundle.key)[0].body == "two"
    delete_comment(store, str(c.id))
    assert list_comments(store, bundle.key) == []
    with pytest.raises(BadInputError):
        delete_comment(store, c.id)


def test_iterate_records_comments_and_writes_feedback_next_to_the_bundle(store: Store, bundle: BundleRecord) -> None:
    add_comment(store, bundle, path="plugin.php", kind="praise", body="Good idea.", author="ana", line_start=21)
    issue = add_comment(
        store, bundle, path="plugin.php", kind="issue", body="Use `esc_html()` here.", author="ana", line_start=21
    )
    decision = decide_on(store, bundle, "iterate", approver="ana", reason="Escape the output.")
    files = record_iterate_feedback(store, decision)
    assert files is not None
    bundle_dir = Path(bundle.path)
    assert files.directory == bundle_dir.with_name(bundle_dir.name + ".review")
    assert verify_bundle(bundle_dir).valid  # nothing was written inside the sealed bundle
    assert [c.decision_id for c in list_comments(store, bundle.key)] == [decision.id, decision.id]
    assert open_comments(store, bundle.key) == []
    with pytest.raises(ConflictError):
        edit_comment(store, issue.id, body="changed after the decision")

    doc = json.loads((files.directory / FEEDBACK_JSON).read_text())
    jsonschema.validate(doc, generate_json_schema(FEEDBACK_SCHEMA))
    assert doc["schema"] == "codebox/review-feedback/v1"
    assert doc["content_digest"] == bundle.content_digest
    assert doc["decision"]["id"] == decision.id and doc["decision"]["reason"] == "Escape the output."
    assert [c["kind"] for c in doc["comments"]] == ["issue", "praise"]  # issues first
    assert doc["comments"][0]["lines"] == ["<?php // LINE twenty"]
    assert doc["summary"] == {"issue": 1, "suggestion": 0, "note": 0, "praise": 1}

    md = (files.directory / FEEDBACK_MD).read_text()
    assert "Escape the output." in md
    assert "## 1. Issue (must change): `plugin.php` line 21" in md
    assert "Use `esc_html()` here." in md and "<?php // LINE twenty" in md
    assert md.index("Issue (must change)") < md.index("Praise")

    # a later comment is not part of that decision's feedback
    add_comment(store, bundle, path="added.php", kind="note", body="later", author="ana")
    again = export_feedback(store, bundle)
    assert len(again.feedback.comments) == 2


def test_feedback_escapes_control_characters_from_the_bundle(store: Store, bundle: BundleRecord) -> None:
    add_comment(
        store, bundle, path="plugin.php", kind="issue", body="bell \x07 in my text", author="ana", line_start=21
    )
    files = export_feedback(store, bundle)
    md = files.markdown.read_text()
    assert "\x07" not in md and "\\x07" in md


def _hostile_change(source: Path) -> None:
    text = (source / "plugin.php").read_text().replace("line 20", "line 20 \x1b[2J\x1b]0;owned\x07 \u202eevil")
    (source / "plugin.php").write_text(text)


def test_feedback_shows_control_characters_of_commented_lines_as_escapes(tmp_path: Path, store: Store) -> None:
    summary, _ = make_bundle(tmp_path, _hostile_change)
    bundle = register_bundle(store, summary.path)
    comment = add_comment(
        store, bundle, path="plugin.php", kind="issue", body="what is this?", author="ana", line_start=21
    )
    assert "\x1b[2J" in comment.lines[0]  # stored as the diff has it
    files = export_feedback(store, bundle)
    md = files.markdown.read_text()
    assert "\x1b" not in md and "\x07" not in md and "\u202e" not in md
    assert "\\x1b[2J" in md and "\\u202e" in md
    assert json.loads(files.json.read_text())["comments"][0]["lines"] == comment.lines


def test_feedback_is_not_written_through_a_planted_link(store: Store, bundle: BundleRecord, tmp_path: Path) -> None:
    add_comment(store, bundle, path="added.php", kind="note", body="n", author="ana")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder = Path(bundle.path)
    folder.with_name(folder.name + ".review").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(BadInputError, match="not a folder"):
        export_feedback(store, bundle)
    assert list(elsewhere.iterdir()) == []


def test_a_schema_2_store_gains_the_comment_and_revision_tables(tmp_path: Path) -> None:
    import sqlite3

    from store.db import MIGRATIONS, SCHEMA_VERSION

    path = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(path)
    for number, script in enumerate(MIGRATIONS[:2]):
        conn.executescript(script)
        conn.execute(f"PRAGMA user_version = {number + 1}")
    conn.execute(
        "INSERT INTO bundles (bundle_id, path, content_digest, status, created_at, updated_at)"
        " VALUES ('b', '/x', ?, 'pending', 't', 't')",
        ("a" * 64,),
    )
    conn.commit()
    conn.close()
    with Store.open(path) as db:
        assert db.schema_version() == SCHEMA_VERSION
        assert [b.bundle_id for b in db.list_bundles()] == ["b"]
        tables = {r["name"] for r in db._query("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"comments", "revisions"} <= tables
        assert list_comments(db, 1) == []
