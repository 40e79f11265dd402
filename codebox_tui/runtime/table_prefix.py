"""Each native sandbox's own table prefix (docs/backends.md, "The table prefix").

WordPress names its tables ``<prefix>options``, ``<prefix>users`` …, and keeps the prefix inside a few rows too:
the ``<prefix>user_roles`` option and the per-site user options in ``usermeta`` (``<prefix>capabilities``,
``<prefix>user_level``, ``<prefix>user-settings`` …). The SQLite Database Integration plugin adds its own
records: each index is named ``<table>__<key>``, and ``_mysql_data_types_cache`` lists every table's columns
and indexes by name.

A native sandbox's prefix comes from its id (:func:`table_prefix_for`). Its database starts as a copy of the
prepared one, whose tables are ``wp_``: :func:`rename_database_prefix` moves that copy to the sandbox's prefix
on the host, before any sandbox process exists (the file is Codebox's own copy until then). A snapshot taken in
one sandbox and restored into another is moved the same way (:func:`rebase_snapshot_tables`). Both follow one
rule, :class:`PrefixRename`.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codebox_tui.errors import SandboxError

# The prefix of the prepared database and of every Playground site (its own wp-config.php).
DEFAULT_TABLE_PREFIX = "wp_"
# What WordPress accepts (letters, digits, underscores; wp-settings.php refuses anything else), ending in `_`.
TABLE_PREFIX_PATTERN = re.compile(r"[A-Za-z0-9_]{0,30}_")
# The plugin's table of MySQL column and index types, keyed by table name.
TYPES_CACHE = "_mysql_data_types_cache"


def table_prefix_for(sandbox_id: str) -> str:
    """The sandbox's table prefix: ``cb`` and 8 hex digits of a hash of its id, then ``_``."""
    return "cb" + hashlib.sha256(sandbox_id.encode("utf-8")).hexdigest()[:8] + "_"


@dataclass(frozen=True)
class PrefixRename:
    """Moving a site's tables and prefixed keys from the prefix ``old`` to ``new``."""

    old: str
    new: str

    def name(self, name: str) -> str:
        """A table, index or prefixed key name: ``<old>rest`` becomes ``<new>rest``; any other name stays."""
        return self.new + name[len(self.old) :] if name.startswith(self.old) else name

    def option_name(self, name: str) -> str:
        """The one option WordPress names with the prefix: ``<prefix>user_roles``."""
        return self.new + "user_roles" if name == self.old + "user_roles" else name

    def sql(self, text: str) -> str:
        """Schema SQL (``CREATE TABLE``/``INDEX``/``TRIGGER``) with every identifier that starts with the old
        prefix renamed, quoted or not."""
        return re.sub(r"(?<![\w$])" + re.escape(self.old) + r"(?=\w)", self.new, text)

    def row_columns(self, table: str) -> dict[str, str]:
        """For a table of the site (named with the new prefix): column -> which rule renames its values."""
        if table == self.new + "options":
            return {"option_name": "option_name"}
        if table == self.new + "usermeta":
            return {"meta_key": "name"}
        if table == TYPES_CACHE:
            return {"table": "name", "column_or_index": "name"}
        return {}

    def value(self, rule: str, value: Any) -> Any:
        """A row's value under ``rule`` (from :meth:`row_columns`); anything but text stays as it is."""
        if not isinstance(value, str):
            return value
        return self.option_name(value) if rule == "option_name" else self.name(value)


def rename_database_prefix(database: Path, rename: PrefixRename) -> None:
    """Move the SQLite database at ``database`` (a fresh copy only the host holds) to the new prefix, in two
    transactions: the schema's names and SQL (tables, their indexes with SQLite's own automatic ones, triggers)
    rewritten in place, as SQLite's own ``ALTER TABLE … RENAME`` did before 3.25 (a dozen of today's renames,
    each re-checking the whole schema, cost ~0.1 s), then the sequence counters and the prefixed rows; a
    SandboxError when SQLite refuses. The copy is Codebox's own until the sandbox starts, and the result is
    checked (``PRAGMA quick_check``) before it is handed over."""
    try:
        connection = _private_connection(database, rename)
        try:
            connection.create_function("codebox_sql", 1, _or_none(rename.sql), deterministic=True)
            connection.execute("BEGIN IMMEDIATE")
            connection.execute("PRAGMA writable_schema = ON")
            connection.execute(
                "UPDATE sqlite_master SET name = CASE WHEN name LIKE ? ESCAPE '\\' "
                "THEN 'sqlite_autoindex_' || codebox_name(substr(name, 18)) ELSE codebox_name(name) END, "
                "tbl_name = codebox_name(tbl_name), sql = codebox_sql(sql)",
                (_like_prefix("sqlite_autoindex_" + rename.old),),
            )
            connection.execute("PRAGMA writable_schema = OFF")
            connection.execute("COMMIT")
        finally:
            connection.close()
        # a new connection reads the rewritten schema; the rows follow it
        connection = _private_connection(database, rename)
        try:
            connection.execute("BEGIN IMMEDIATE")
            tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            if "sqlite_sequence" in tables:
                connection.execute("UPDATE sqlite_sequence SET name = codebox_name(name)")
            for table in tables:
                for column, rule in rename.row_columns(table).items():
                    connection.execute(
                        f"UPDATE {_quoted(table)} SET {_quoted(column)} = codebox_value(?, {_quoted(column)}) "
                        f"WHERE {_quoted(column)} <> codebox_value(?, {_quoted(column)})",
                        (rule, rule),
                    )
            connection.execute("COMMIT")
            problems = [row[0] for row in connection.execute("PRAGMA quick_check")]
        finally:
            connection.close()
    except sqlite3.Error as error:
        raise SandboxError(
            f"could not give the sandbox database its table prefix {rename.new}: {error}", code="native-install-failed"
        ) from error
    if problems != ["ok"]:
        raise SandboxError(
            f"the sandbox database with its table prefix {rename.new} fails SQLite's check: {problems[:3]}",
            code="native-install-failed",
        )


def rebase_snapshot_tables(payload: dict[str, Any], rename: PrefixRename) -> dict[str, Any]:
    """A snapshot payload's ``database`` and ``metadata`` (as :func:`site_state.restore_snapshot` sends them)
    moved to the new prefix: table names, their schema SQL, the prefixed rows and the sequence counters."""
    tables = []
    for table in payload["database"]["tables"]:
        name = rename.name(table["name"])
        columns = rename.row_columns(name)
        rows = [
            {
                column: rename.value(columns[column], value) if column in columns else value
                for column, value in row.items()
            }
            for row in table["rows"]
        ]
        tables.append(
            {
                **table,
                "name": name,
                "createSql": rename.sql(table["createSql"]),
                "extraSql": [rename.sql(sql) for sql in table.get("extraSql") or []],
                "rows": rows,
            }
        )
    metadata = dict(payload.get("metadata") or {})
    if isinstance(metadata.get("sqliteSequence"), list):  # sandbox-written: only well-formed entries are moved
        metadata["sqliteSequence"] = [
            {**entry, "name": rename.name(entry["name"])}
            if isinstance(entry, dict) and isinstance(entry.get("name"), str)
            else entry
            for entry in metadata["sqliteSequence"]
        ]
    if isinstance(metadata.get("scope"), dict):
        metadata["scope"] = rebase_scope_tables(metadata["scope"], rename)
    metadata["tablePrefix"] = rename.new
    return {**payload, "database": {**payload["database"], "tables": tables}, "metadata": metadata}


def rebase_scope_tables(scope: dict[str, Any], rename: PrefixRename) -> dict[str, Any]:
    """A snapshot scope whose table globs (``tables``, ``excludeTables``) that start with the old prefix start
    with the new one: ``wp_options`` in a recipe names the native sandbox's own options table."""
    out = dict(scope)
    for key in ("tables", "excludeTables"):
        if isinstance(scope.get(key), list):
            out[key] = [rename.name(glob) if isinstance(glob, str) else glob for glob in scope[key]]
    return out


def _private_connection(database: Path, rename: PrefixRename) -> sqlite3.Connection:
    """A connection to a database file no other process has open: no waiting for the disk (a crash discards the
    half-made sandbox anyway), the journal in memory; the renaming rules as SQL functions."""
    connection = sqlite3.connect(database, isolation_level=None)
    connection.execute("PRAGMA synchronous = OFF")
    connection.execute("PRAGMA journal_mode = MEMORY")
    connection.create_function("codebox_name", 1, rename.name, deterministic=True)
    connection.create_function("codebox_value", 2, rename.value, deterministic=True)
    return connection


def _or_none(function: Callable[[str], str]) -> Callable[[str | None], str | None]:
    return lambda text: None if text is None else function(text)


def _like_prefix(text: str) -> str:
    """A LIKE pattern (escape character ``\\``) for the names that start with ``text``."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
