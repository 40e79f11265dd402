"""The table-prefix rule (runtime/table_prefix.py): the prefix a sandbox id gives, a real SQLite file moved to it,
and a snapshot payload moved the same way. The sandboxes themselves: tests/e2e/test_native_table_prefix.py."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from codebox_tui.runtime.table_prefix import (
    PrefixRename,
    rebase_snapshot_tables,
    rename_database_prefix,
    table_prefix_for,
)

SCHEMA = [
    "CREATE TABLE _mysql_data_types_cache (`table` TEXT, `column_or_index` TEXT, `mysql_type` TEXT, "
    "PRIMARY KEY(`table`, `column_or_index`))",
    'CREATE TABLE "wp_options" ("option_id" integer PRIMARY KEY AUTOINCREMENT, "option_name" text UNIQUE, '
    '"option_value" text)',
    'CREATE INDEX "wp_options__option_name" ON "wp_options" ("option_name")',
    'CREATE TABLE "wp_usermeta" ("umeta_id" integer PRIMARY KEY AUTOINCREMENT, "user_id" integer, "meta_key" text)',
    "CREATE TABLE wp_term_relationships (object_id integer, term_taxonomy_id integer, "
    "PRIMARY KEY (object_id, term_taxonomy_id))",
    "CREATE TABLE myplugin_wp_log (id integer)",
]
ROWS = [
    "INSERT INTO wp_options (option_name, option_value) VALUES ('siteurl', 'x'), ('wp_user_roles', 'r'), "
    "('wp_page_for_privacy_policy', '3')",
    "INSERT INTO wp_usermeta (user_id, meta_key) VALUES (1, 'wp_capabilities'), (1, 'wp_user_level'), (1, 'nickname')",
    "INSERT INTO _mysql_data_types_cache VALUES ('wp_options', 'option_name', 'varchar(191)'), "
    "('wp_options', 'wp_options__option_name', 'KEY')",
]


def test_a_sandbox_id_gives_a_short_deterministic_prefix_wordpress_accepts() -> None:
    prefix = table_prefix_for("sandbox-native-0123456789ab")
    assert re.fullmatch(r"cb[0-9a-f]{8}_", prefix)
    assert prefix == table_prefix_for("sandbox-native-0123456789ab") != table_prefix_for("sandbox-native-0123456789ac")


def test_schema_sql_renames_identifiers_that_start_with_the_prefix_only() -> None:
    rename = PrefixRename("wp_", "cb1_")
    assert (
        rename.sql('CREATE INDEX "wp_posts__x" ON "wp_posts" (a)') == 'CREATE INDEX "cb1_posts__x" ON "cb1_posts" (a)'
    )
    assert rename.sql("CREATE TABLE wp_log (a)") == "CREATE TABLE cb1_log (a)"
    assert rename.sql('CREATE TABLE "myplugin_wp_log" (a)') == 'CREATE TABLE "myplugin_wp_log" (a)'
    assert rename.option_name("wp_user_roles") == "cb1_user_roles"
    assert rename.option_name("wp_page_for_privacy_policy") == "wp_page_for_privacy_policy"


def test_a_real_database_moves_to_the_new_prefix_and_stays_sound(tmp_path: Path) -> None:
    database = tmp_path / ".ht.sqlite"
    with sqlite3.connect(database) as connection:
        for sql in SCHEMA + ROWS:
            connection.execute(sql)
    rename_database_prefix(database, PrefixRename("wp_", "cb1_"))

    connection = sqlite3.connect(database)
    names = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
    assert {"cb1_options", "cb1_options__option_name", "cb1_usermeta", "cb1_term_relationships"} <= names
    assert "sqlite_autoindex_cb1_term_relationships_1" in names and "myplugin_wp_log" in names
    assert not any(name.startswith(("wp_", "sqlite_autoindex_wp_")) for name in names), names
    assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    options = {row[0] for row in connection.execute("SELECT option_name FROM cb1_options")}
    assert options == {"siteurl", "cb1_user_roles", "wp_page_for_privacy_policy"}
    keys = {row[0] for row in connection.execute("SELECT meta_key FROM cb1_usermeta")}
    assert keys == {"cb1_capabilities", "cb1_user_level", "nickname"}
    assert set(connection.execute("SELECT * FROM _mysql_data_types_cache")) == {
        ("cb1_options", "option_name", "varchar(191)"),
        ("cb1_options", "cb1_options__option_name", "KEY"),
    }
    assert {row[0] for row in connection.execute("SELECT name FROM sqlite_sequence")} == {"cb1_options", "cb1_usermeta"}
    connection.execute("INSERT INTO cb1_term_relationships VALUES (1, 1)")  # the table works under its new name


def test_a_snapshot_payload_moves_with_the_same_rule() -> None:
    payload = {
        "metadata": {
            "tablePrefix": "cbA_",
            "sqliteSequence": [{"name": "cbA_options", "seq": 7}],
            "scope": {"tables": ["cbA_options", "other"]},
        },
        "database": {
            "tables": [
                {
                    "name": "cbA_options",
                    "createSql": 'CREATE TABLE "cbA_options" (option_name text)',
                    "extraSql": ['CREATE INDEX "cbA_options__n" ON "cbA_options" (option_name)'],
                    "rows": [{"option_name": "cbA_user_roles"}, {"option_name": "cbA_other"}],
                },
                {
                    "name": "cbA_usermeta",
                    "createSql": "CREATE TABLE cbA_usermeta (meta_key text)",
                    "rows": [{"meta_key": "cbA_capabilities"}, {"meta_key": {"base64": "AA=="}}],
                },
            ]
        },
        "files": [],
    }
    moved = rebase_snapshot_tables(payload, PrefixRename("cbA_", "cbB_"))
    options, usermeta = moved["database"]["tables"]
    assert options["name"] == "cbB_options" and options["createSql"] == 'CREATE TABLE "cbB_options" (option_name text)'
    assert options["extraSql"] == ['CREATE INDEX "cbB_options__n" ON "cbB_options" (option_name)']
    assert options["rows"] == [{"option_name": "cbB_user_roles"}, {"option_name": "cbA_other"}]
    assert usermeta["rows"] == [{"meta_key": "cbB_capabilities"}, {"meta_key": {"base64": "AA=="}}]
    assert moved["metadata"]["sqliteSequence"] == [{"name": "cbB_options", "seq": 7}]
    assert moved["metadata"]["scope"] == {"tables": ["cbB_options", "other"]}
    assert moved["metadata"]["tablePrefix"] == "cbB_"
