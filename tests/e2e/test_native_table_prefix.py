"""Each native sandbox's own table prefix (issue #28; docs/backends.md, "The table prefix"): two real native
sandboxes, booted once for the module (a fraction of a second each) and checked for several things — each has its
own prefix in WordPress, the site-state summary and its database, with the administrator's role intact; a snapshot
of one restores into the other under the other's prefix. The attack the prefix defeats (decoy `wp_` tables) is in
tests/security/test_site_state_fail_closed.py."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from codebox_tui.runtime import site_state
from tests.factories.native import native_sandbox

pytestmark = pytest.mark.native

CORE_TABLES = {
    "commentmeta",
    "comments",
    "links",
    "options",
    "postmeta",
    "posts",
    "term_relationships",
    "term_taxonomy",
    "termmeta",
    "terms",
    "usermeta",
    "users",
}
SITE = (
    "<?php require '/wordpress/wp-load.php'; global $wpdb;"
    "echo json_encode(['prefix' => $wpdb->prefix, 'tables' => $wpdb->get_col('SHOW TABLES'),"
    " 'roles' => get_userdata(1)->roles, 'manages' => user_can(1, 'manage_options'),"
    " 'moved' => $wpdb->get_var(\"SELECT post_title FROM {$wpdb->posts} WHERE post_name = 'moved-post'\"),"
    " 'marker' => get_user_option('codebox_marker', 1)]);"
)


@pytest.fixture(scope="module")
def two_sandboxes() -> Iterator[tuple[Any, Any]]:
    with native_sandbox() as first, native_sandbox() as second:
        yield first, second


def _site(sandbox: Any) -> dict[str, Any]:
    result = sandbox.run_php(SITE, 120)
    assert result.exit_code == 0, result.errors
    found: dict[str, Any] = json.loads(result.text)
    return found


def _site_tables(tables: list[str]) -> list[str]:
    """The site's tables, without SQLite's and its plugin's own."""
    return [name for name in tables if not name.startswith(("sqlite_", "_"))]


def test_each_native_sandbox_has_its_own_prefix_and_sees_only_its_own_tables(two_sandboxes: tuple[Any, Any]) -> None:
    first, second = two_sandboxes
    assert first.table_prefix != second.table_prefix
    for sandbox in (first, second):
        prefix = sandbox.table_prefix
        assert re.fullmatch(r"cb[0-9a-f]{8}_", prefix), prefix
        seen = _site(sandbox)
        assert seen["prefix"] == prefix
        tables = _site_tables(seen["tables"])
        assert {name[len(prefix) :] for name in tables} == CORE_TABLES and all(t.startswith(prefix) for t in tables)
        # the prefixed keys moved with the tables: the administrator is still one
        assert seen["roles"] == ["administrator"] and seen["manages"] is True
        summary = site_state.take_summary(sandbox)
        assert summary.tablePrefix == prefix
        assert [user.capabilities for user in summary.users.values()] == [["administrator"]]
        assert "administrator" in summary.roles
        assert not any(name.startswith("wp_") for name in summary.tables)
        # code that assumes `wp_` finds no table of the site
        probe = sandbox.run_php(
            "<?php require '/wordpress/wp-load.php'; global $wpdb;"
            ' var_export($wpdb->get_var("SELECT COUNT(*) FROM wp_options"));',
            120,
        )
        assert probe.text.strip().endswith("NULL"), probe.text


def test_a_snapshot_of_one_native_sandbox_restores_into_another_under_its_prefix(
    two_sandboxes: tuple[Any, Any],
) -> None:
    first, second = two_sandboxes
    made = first.run_php(
        "<?php require '/wordpress/wp-load.php';"
        "wp_insert_post(['post_title' => 'Moved between sandboxes', 'post_name' => 'moved-post',"
        " 'post_status' => 'publish']); update_user_option(1, 'codebox_marker', 'kept'); echo 'made';",
        120,
    )
    assert made.text.endswith("made"), made.errors
    snapshot = site_state.take_snapshot(first, site_state.snapshot_scope({}, []))
    assert snapshot.metadata["tablePrefix"] == first.table_prefix

    site_state.restore_snapshot(second, snapshot)
    seen = _site(second)
    assert seen["prefix"] == second.table_prefix
    assert seen["moved"] == "Moved between sandboxes" and seen["marker"] == "kept"
    assert seen["roles"] == ["administrator"] and seen["manages"] is True
    tables = _site_tables(seen["tables"])
    assert tables and all(name.startswith(second.table_prefix) for name in tables), tables
    assert site_state.take_summary(second).tablePrefix == second.table_prefix
