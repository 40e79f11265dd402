"""The site's own state: the compact summary, the site-state diff with its risk flags, the
``wordpress-state`` export, runtime snapshots and checkpoint results (docs/site-state.md).

The summary and the diff are Codebox's own formats (``codebox/…`` ids); the export, snapshot and
checkpoint documents follow the reference's field names (``wp-codebox/…`` ids).
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field

from codebox_tui.contracts.canonical import sha256_hex, stable_json
from codebox_tui.contracts.common import Contract, OpenContract

SITE_STATE_SUMMARY_SCHEMA: Final = "codebox/site-state-summary/v1"
SITE_STATE_DIFF_SCHEMA: Final = "codebox/site-state-diff/v1"
STATE_EXPORT_SCHEMA: Final = "wp-codebox/wordpress-state-export/v1"
STATE_SECTION_SCHEMA: Final = "wp-codebox/wordpress-state-section/v1"
RUNTIME_SNAPSHOT_SCHEMA: Final = "wp-codebox/wordpress-runtime-snapshot/v1"
CHECKPOINT_RESULT_SCHEMA: Final = "wp-codebox/runtime-checkpoint-result/v1"

StateSection = Literal[
    "summary", "posts", "terms", "menus", "templates", "media", "options", "users", "rest-routes", "abilities"
]
STATE_SECTIONS: Final[tuple[str, ...]] = (
    "summary",
    "posts",
    "terms",
    "menus",
    "templates",
    "media",
    "options",
    "users",
    "rest-routes",
    "abilities",
)


# -- summary -------------------------------------------------------------------------------------
class OptionState(Contract):
    sha256: str
    bytes: int
    autoload: str = ""
    # A short prefix of the raw value; None when the name looks secret (``redacted``) or the value
    # is not UTF-8.
    preview: str | None = None
    redacted: bool = False


class TableState(Contract):
    sha256: str = Field(description="sha256 of the table's CREATE statement")
    columns: list[str]
    rows: int


class PostState(Contract):
    type: str
    status: str
    title: str | None = None
    name: str = ""
    author: int = 0
    sha256: str = Field(description="sha256 over the whole row")


class TermState(Contract):
    taxonomy: str
    slug: str
    name: str | None = None
    sha256: str


class UserState(Contract):
    login: str
    capabilities: list[str] = Field(description="roles and capabilities granted in <prefix>capabilities")


class CronEvent(Contract):
    hook: str
    timestamp: int
    schedule: str | None = None
    argsSha256: str


class ThemeState(Contract):
    stylesheet: str
    template: str


class SiteStateSummary(Contract):
    """A compact picture of the site's database, read without loading WordPress."""

    schema_: Literal["codebox/site-state-summary/v1"] = Field(SITE_STATE_SUMMARY_SCHEMA, alias="schema")
    takenAt: str
    tablePrefix: str
    truncated: list[str] = Field(
        default_factory=list, description="sections cut at the row limit (their diff is incomplete)"
    )
    options: dict[str, OptionState]
    transients: int = 0
    tables: dict[str, TableState]
    posts: dict[str, PostState]
    terms: dict[str, TermState]
    users: dict[str, UserState]
    roles: dict[str, list[str]]
    cron: list[CronEvent]
    rewriteRules: list[str]
    activePlugins: list[str]
    theme: ThemeState
    siteurl: str
    home: str
    controlFiles: dict[str, str] = Field(
        default_factory=dict,
        description="files that run before or inside WordPress without being a plugin (Playground's "
        "/internal/shared: php.ini, prepend, preload, extensions; wp-content drop-ins and mu-plugins): "
        "path -> 'sha256:<hex>', 'link:<target>', 'dir' or 'other' (docs/security.md)",
    )
    timing: dict[str, int] = Field(default_factory=dict, description="phpMs (inside the sandbox) and totalMs")


# -- diff ----------------------------------------------------------------------------------------
ChangeStatus = Literal["added", "changed", "deleted"]


class OptionChange(Contract):
    name: str
    status: ChangeStatus
    before: str | None = None
    after: str | None = None
    redacted: bool = False
    beforeBytes: int | None = None
    afterBytes: int | None = None


class TableChange(Contract):
    name: str
    status: Literal["created", "altered", "dropped", "rows-changed"]
    columnsAdded: list[str] = Field(default_factory=list)
    columnsRemoved: list[str] = Field(default_factory=list)
    rowsBefore: int | None = None
    rowsAfter: int | None = None


class RecordChange(Contract):
    """A post or term (by id) that was added, changed or deleted."""

    id: str
    status: ChangeStatus
    kind: str = Field(description="post type or taxonomy")
    label: str = Field(description="title or name, slug when there is none")


class UserChange(Contract):
    id: str
    login: str
    status: ChangeStatus
    capabilitiesAdded: list[str] = Field(default_factory=list)
    capabilitiesRemoved: list[str] = Field(default_factory=list)


class RoleChange(Contract):
    role: str
    status: ChangeStatus
    capabilitiesAdded: list[str] = Field(default_factory=list)
    capabilitiesRemoved: list[str] = Field(default_factory=list)


class CronChange(Contract):
    hook: str
    status: Literal["added", "removed"]
    schedule: str | None = None
    timestamp: int


class ControlFileChange(Contract):
    path: str
    status: ChangeStatus
    before: str | None = Field(None, description="'sha256:<hex>', 'link:<target>', 'dir' or 'other'")
    after: str | None = None


class ValueChange(Contract):
    before: Any = None
    after: Any = None


class FileOutsideMounts(Contract):
    """A file or link under the sandbox's wp-content, outside every declared mount, that the run added,
    changed or deleted (docs/site-state.md, "Files written outside the declared mounts")."""

    path: str
    status: ChangeStatus
    type: Literal["file", "link"]
    bytes: int | None = None


class RiskFlag(Contract):
    code: Literal[
        "new-administrator",
        "capabilities-granted",
        "siteurl-changed",
        "home-changed",
        "active-plugins-changed",
        "cron-event-added",
        "theme-changed",
        "sandbox-control-file-modified",
        "files-outside-mounts",
        "database-configuration-changed",
        "summary-unavailable",
        "core-file-changed",
    ]
    severity: Literal["high", "medium"]
    message: str
    subject: str = Field(description="what the flag is about: a user login, role, option, hook or file path")


class SiteStateDiff(Contract):
    """What a run did to the site's database, between two summaries, with risk flags."""

    schema_: Literal["codebox/site-state-diff/v1"] = Field(SITE_STATE_DIFF_SCHEMA, alias="schema")
    before: str = Field(description="takenAt of the summary before")
    after: str = Field(description="takenAt of the summary after")
    incomplete: list[str] = Field(default_factory=list, description="sections a row limit cut in either summary")
    options: list[OptionChange] = Field(default_factory=list)
    tables: list[TableChange] = Field(default_factory=list)
    posts: list[RecordChange] = Field(default_factory=list)
    terms: list[RecordChange] = Field(default_factory=list)
    users: list[UserChange] = Field(default_factory=list)
    roles: list[RoleChange] = Field(default_factory=list)
    cron: list[CronChange] = Field(default_factory=list)
    rewriteRulesAdded: list[str] = Field(default_factory=list)
    rewriteRulesRemoved: list[str] = Field(default_factory=list)
    activePlugins: ValueChange | None = None
    theme: ValueChange | None = None
    siteurl: ValueChange | None = None
    home: ValueChange | None = None
    controlFiles: list[ControlFileChange] = Field(default_factory=list)
    filesOutsideMounts: list[FileOutsideMounts] = Field(
        default_factory=list, description="wp-content paths outside the declared mounts the run wrote (at most 500)"
    )
    risks: list[RiskFlag] = Field(default_factory=list)
    empty: bool = Field(description="true when nothing changed")


# -- wordpress-state export ----------------------------------------------------------------------
def _default_sections() -> list[StateSection]:
    return ["summary"]


class StateExportConfig(Contract):
    sections: list[StateSection] = Field(default_factory=_default_sections, min_length=1)
    redaction: Literal["safe", "none"] = "safe"
    includeContent: bool = False
    optionNames: list[str] = Field(default_factory=list, description="glob patterns ('*'); default: autoloaded")
    userFields: list[str] = Field(default_factory=list)


class StateSectionDocument(Contract):
    schema_: Literal["wp-codebox/wordpress-state-section/v1"] = Field(STATE_SECTION_SCHEMA, alias="schema")
    version: Literal[1] = 1
    section: StateSection
    data: dict[str, Any]


class StateExport(Contract):
    schema_: Literal["wp-codebox/wordpress-state-export/v1"] = Field(STATE_EXPORT_SCHEMA, alias="schema")
    version: Literal[1] = 1
    exportedAt: str
    config: StateExportConfig
    sections: list[StateSectionDocument]


# -- runtime snapshot ----------------------------------------------------------------------------
class SnapshotCompatibility(Contract):
    backend: Literal["wordpress-playground"] = "wordpress-playground"
    wordpressVersion: str
    phpVersion: str


class SnapshotTable(Contract):
    name: str
    createSql: str
    extraSql: list[str] = Field(default_factory=list, description="the table's index and trigger statements")
    rows: list[dict[str, Any]] = Field(description="column → value; a non-UTF-8 value is {base64}")
    rowCount: int
    rowFilter: str | None = Field(None, description="SQL condition when only some rows are in scope")


class SnapshotDatabase(Contract):
    tables: list[SnapshotTable]


class SnapshotFile(Contract):
    scope: Literal["wp-content"] = "wp-content"
    path: str
    bytes: int
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    base64: str | None = None
    # Where the bytes are when they are not inline: a bundle-relative content-addressed blob
    # (files/runtime-snapshots/blobs/<sha256>; docs/site-state.md, "Snapshots in a bundle").
    blob: str | None = None


class SnapshotHashes(Contract):
    database: str
    files: str


class RuntimeSnapshot(Contract):
    schema_: Literal["wp-codebox/wordpress-runtime-snapshot/v1"] = Field(RUNTIME_SNAPSHOT_SCHEMA, alias="schema")
    version: Literal[1] = 1
    id: str
    createdAt: str
    compatibility: SnapshotCompatibility
    metadata: dict[str, Any]
    database: SnapshotDatabase
    files: list[SnapshotFile]
    hashes: SnapshotHashes


def snapshot_hashes(database: Any, files: Any) -> dict[str, str]:
    """A snapshot's ``hashes``: ``contentDigest`` of the table list and of ``[{path, sha256, bytes}]``
    (docs/site-state.md). Written by the host, checked on restore and by the bundle verifier."""
    tables = database.get("tables") if isinstance(database, dict) else None
    listed = (
        [
            {"path": f.get("path"), "sha256": f.get("sha256"), "bytes": f.get("bytes")}
            for f in files
            if isinstance(f, dict)
        ]
        if isinstance(files, list)
        else []
    )
    return {
        "database": sha256_hex(stable_json(tables if isinstance(tables, list) else [])),
        "files": sha256_hex(stable_json(listed)),
    }


# -- checkpoints ---------------------------------------------------------------------------------
class Checkpoint(OpenContract):
    name: str
    snapshotId: str
    createdAt: str
    restoredAt: str | None = None
    metadata: dict[str, Any] | None = None
    summary: dict[str, Any] | None = None


class CheckpointResult(Contract):
    schema_: Literal["wp-codebox/runtime-checkpoint-result/v1"] = Field(CHECKPOINT_RESULT_SCHEMA, alias="schema")
    status: Literal["created", "restored", "listed"]
    operation: Literal["create", "restore", "list"]
    checkpoint: Checkpoint | None = None
    checkpoints: list[Checkpoint] | None = None
