"""The site's own state, read and written inside a sandbox (docs/site-state.md).

- :func:`take_summary`: the compact site-state summary (read from the database, WordPress not loaded);
  two of them make a site-state diff (:func:`codebox_tui.runtime.site_state_diff.diff_summaries`).
- :func:`read_active_plugins`: the ``active_plugins`` option alone, read the same way.
- :func:`export_wordpress_state`: the ``wordpress-state`` export (sections, ``redaction: safe``).
- :func:`take_snapshot` / :func:`restore_snapshot`: ``wp-codebox/wordpress-runtime-snapshot/v1``.
- :func:`checkpoint_create` / :func:`checkpoint_restore` / :func:`checkpoint_list`: named snapshots kept
  inside the sandbox.

The PHP side is ``runtime/php/site_state.php``. Whatever it prints is sandbox output: parsed as JSON,
validated by the pydantic models, and an error from it is a :class:`SandboxError` naming the action.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, Final, TypeVar

from pydantic import BaseModel, ValidationError

from codebox_tui.bundle import layout
from codebox_tui.bundle.safe_read import UnsafeFileError, load_json_file, parse_json, read_regular
from codebox_tui.contracts.canonical import sha256_hex
from codebox_tui.contracts.common import utc_now_iso
from codebox_tui.contracts.runtime import MountSpec
from codebox_tui.contracts.site_state import (
    Checkpoint,
    CheckpointResult,
    RuntimeSnapshot,
    SiteStateSummary,
    SnapshotCompatibility,
    SnapshotHashes,
    StateExport,
    StateExportConfig,
    StateSectionDocument,
    snapshot_hashes,
)
from codebox_tui.errors import BadInputError, SandboxError
from codebox_tui.runtime.backend import PhpResult, Sandbox
from codebox_tui.runtime.site_state_diff import SECRET_NAME_PHP, redact_summary
from codebox_tui.runtime.table_prefix import (
    DEFAULT_TABLE_PREFIX,
    TABLE_PREFIX_PATTERN,
    PrefixRename,
    rebase_scope_tables,
    rebase_snapshot_tables,
)

M = TypeVar("M", bound=BaseModel)
PHP_FILE: Final = Path(__file__).with_name("php") / "site_state.php"
WP_CONTENT: Final = "/wordpress/wp-content"
CHECKPOINT_DIR: Final = "/tmp/codebox-checkpoints"
CHECKPOINT_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
# Never in a snapshot's files: the database file itself (it is in `database.tables`).
ALWAYS_SKIPPED: Final = ("database",)
SNAPSHOT_ARGS: Final = (
    "snapshot-include-wp-content",
    "snapshot-exclude-wp-content",
    "snapshot-database-tables",
    "snapshot-exclude-database-tables",
    "snapshot-option-names",
    "snapshot-post-types",
)
# The largest snapshot document the host reads back from a sandbox (files inline, base64): a default site's
# is ~17 MB; a hostile site cannot make the host read more than this (docs/site-state.md).
MAX_SNAPSHOT_DOCUMENT_BYTES = 256 * 1024 * 1024


@cache
def _php_source() -> str:
    text = PHP_FILE.read_text(encoding="utf-8")
    return text[len("<?php") :] if text.startswith("<?php") else text


def state_code(sandbox: Sandbox, request: dict[str, Any]) -> str:
    """The PHP that runs one action of site_state.php (``request``) in ``sandbox`` and prints its JSON result on
    one line. The database's readers follow the sandbox's own table prefix, never one the database suggests."""
    request = {**request, "tablePrefix": sandbox.table_prefix}
    encoded = base64.b64encode(json.dumps(request).encode("utf-8")).decode("ascii")
    return f"<?php\n$codebox_state_request = json_decode(base64_decode('{encoded}'), true);\n{_php_source()}"


def _run(sandbox: Sandbox, request: dict[str, Any], timeout_s: float, *, probe: bool = True) -> dict[str, Any]:
    """Run one action of site_state.php and return its parsed JSON result. Actions that do not load
    WordPress run as a probe: nothing the sandbox planted runs with them (docs/security.md, "What the
    sandbox can and cannot forge")."""
    code = state_code(sandbox, request)
    result = sandbox.probe_php(code, timeout_s) if probe else sandbox.run_php(code, timeout_s)
    return state_result(request["action"], result)


def state_result(action: str, result: PhpResult) -> dict[str, Any]:
    """The JSON object site_state.php printed for ``action``; a :class:`SandboxError` for anything else or for the
    error it reports."""
    try:
        value = json.loads(result.text)
    except ValueError:
        detail = (result.errors or result.text).strip()[:500]
        raise SandboxError(
            f"site-state {action}: the sandbox printed no JSON result (exit {result.exit_code}): {detail}",
            code="site-state-failed",
        ) from None
    if not isinstance(value, dict):
        raise SandboxError(f"site-state {action}: expected a JSON object from the sandbox", code="site-state-failed")
    error = value.get("error")
    if isinstance(error, dict):
        raise SandboxError(
            f"site-state {action}: {error.get('message')}", code=str(error.get("code") or "site-state-failed")
        )
    return value


def _validated(model: type[M], value: Any, what: str) -> M:
    try:
        return model.model_validate(value)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise SandboxError(
            f"{what} from the sandbox is malformed at {where or '(root)'}: {first['msg']}", code="site-state-malformed"
        ) from None


# -- summary --------------------------------------------------------------------------------------
def summary_request(max_rows: int = 5000) -> dict[str, Any]:
    """The site-state request for a summary (:func:`take_summary`)."""
    return {"action": "summary", "maxRows": max_rows, "previewBytes": 200}


def take_summary(sandbox: Sandbox, *, timeout_s: float = 60.0, max_rows: int = 5000) -> SiteStateSummary:
    """The compact site-state summary of the sandbox's site, secret-like option values redacted."""
    started = time.monotonic()
    request = summary_request(max_rows)
    return summary_from(_run(sandbox, request, timeout_s), started)


def summary_from(value: dict[str, Any], started: float) -> SiteStateSummary:
    """The summary from site_state.php's result (:func:`state_result`), validated and redacted; ``started`` is when
    its probe began (the summary's ``timing``)."""
    php_ms = value.pop("phpMs", 0)
    mappings = ("options", "tables", "posts", "terms", "users", "roles", "controlFiles")
    value = {key: ({} if item == [] and key in mappings else item) for key, item in value.items()}
    summary = _validated(
        SiteStateSummary,
        {
            **value,
            "takenAt": utc_now_iso(),
            "timing": {
                "phpMs": php_ms if isinstance(php_ms, int) else 0,
                "totalMs": int((time.monotonic() - started) * 1000),
            },
        },
        "the site-state summary",
    )
    return redact_summary(summary)


def read_active_plugins(sandbox: Sandbox, *, timeout_s: float = 60.0) -> list[str]:
    """The site's ``active_plugins`` option, read from the database without loading WordPress (so no plugin's
    code runs to answer); a :class:`SandboxError` when the answer is not a list of strings."""
    value = _run(sandbox, {"action": "active-plugins"}, timeout_s).get("activePlugins")
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise SandboxError(
            "site-state active-plugins: expected a list of plugin files from the sandbox", code="site-state-failed"
        )
    return value


# -- wordpress-state export -----------------------------------------------------------------------
def export_wordpress_state(
    sandbox: Sandbox, config: StateExportConfig | None = None, *, timeout_s: float = 120.0
) -> StateExport:
    """The ``wordpress-state`` export of the given sections (loads WordPress inside the sandbox)."""
    config = config or StateExportConfig()
    # It loads WordPress, so the plugins under review run in it anyway: an ordinary request, advisory.
    value = _run(
        sandbox,
        {
            "action": "export",
            "config": config.model_dump(mode="json"),
            "secretPattern": SECRET_NAME_PHP,
            "maxItems": 1000,
        },
        timeout_s,
        probe=False,
    )
    sections = value.get("sections")
    if not isinstance(sections, dict):
        raise SandboxError("wordpress-state export: the sandbox returned no sections", code="site-state-malformed")
    documents = []
    for name in config.sections:
        data = sections.get(name)
        if not isinstance(data, dict):
            raise SandboxError(f"wordpress-state export: section {name} is missing", code="site-state-malformed")
        documents.append(
            _validated(StateSectionDocument, {"section": name, "data": data}, f"wordpress-state section {name}")
        )
    return StateExport(exportedAt=utc_now_iso(), config=config, sections=documents)


def export_config_from_args(args: dict[str, str]) -> StateExportConfig:
    """``sections=a,b`` ``redaction=safe|none`` ``include-content=true`` ``option-names=a*,b`` ``user-fields=…``."""
    raw: dict[str, Any] = {}
    if args.get("sections"):
        raw["sections"] = _split(args["sections"])
    if args.get("redaction"):
        raw["redaction"] = args["redaction"]
    if args.get("include-content"):
        raw["includeContent"] = args["include-content"].lower() in ("1", "true", "yes")
    if args.get("option-names"):
        raw["optionNames"] = _split(args["option-names"])
    if args.get("user-fields"):
        raw["userFields"] = _split(args["user-fields"])
    try:
        return StateExportConfig.model_validate(raw)
    except ValidationError as error:
        first = error.errors()[0]
        field = {"includeContent": "include-content", "optionNames": "option-names", "userFields": "user-fields"}.get(
            str(first["loc"][0]), str(first["loc"][0])
        )
        raise BadInputError(
            f"{field}: {first['msg']} (sections: summary, posts, terms, menus, templates, media, "
            "options, users, rest-routes, abilities; redaction: safe or none)",
            code="invalid-arg",
            field=field,
        ) from None


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


# -- snapshots ------------------------------------------------------------------------------------
def readonly_content_paths(mounts: list[MountSpec]) -> list[str]:
    """wp-content-relative paths of read-only mounts (never in a snapshot, never restored)."""
    out = []
    for mount in mounts:
        target = mount.target.rstrip("/")
        if mount.mode == "readonly" and target.startswith(WP_CONTENT + "/"):
            out.append(target[len(WP_CONTENT) + 1 :])
    return out


def snapshot_scope(args: dict[str, str], readonly_paths: list[str]) -> dict[str, Any]:
    """The scoping arguments of a snapshot (docs/site-state.md, "Snapshots") as the PHP side reads them."""
    exclude = list(ALWAYS_SKIPPED) + _split(args.get("snapshot-exclude-wp-content", ""))
    exclude += [path for path in readonly_paths if path not in exclude]
    scope: dict[str, Any] = {"excludeContent": exclude}
    for arg, key in (
        ("snapshot-include-wp-content", "includeContent"),
        ("snapshot-database-tables", "tables"),
        ("snapshot-exclude-database-tables", "excludeTables"),
        ("snapshot-option-names", "optionNames"),
        ("snapshot-post-types", "postTypes"),
    ):
        if args.get(arg):
            scope[key] = _split(args[arg])
    return scope


def take_snapshot(
    sandbox: Sandbox, scope: dict[str, Any], *, timeout_s: float = 120.0, metadata: dict[str, Any] | None = None
) -> RuntimeSnapshot:
    """A ``wp-codebox/wordpress-runtime-snapshot/v1`` with every in-scope file's bytes inline."""
    target = f"/tmp/codebox-snapshot-{secrets.token_hex(6)}.json"
    value = _run(
        sandbox,
        {"action": "snapshot", "scope": _site_scope(sandbox, scope), "content": "inline", "writeTo": target},
        timeout_s,
    )
    try:
        document = json.loads(sandbox.read_file(target, timeout_s, max_bytes=MAX_SNAPSHOT_DOCUMENT_BYTES))
    except ValueError:
        raise SandboxError(
            "snapshot: the document the sandbox wrote is not JSON", code="site-state-malformed"
        ) from None
    finally:
        _run_quiet(sandbox, f"<?php @unlink('{target}');")
    if not isinstance(document, dict):
        raise SandboxError("snapshot: expected a JSON object", code="site-state-malformed")
    document["metadata"] = {**(document.get("metadata") or {}), **(metadata or {}), "stats": value.get("stats")}
    snapshot_id = f"runtime-snapshot-{secrets.token_hex(8)}"
    snapshot = _validated(
        RuntimeSnapshot,
        {
            "id": snapshot_id,
            "createdAt": utc_now_iso(),
            "compatibility": {"wordpressVersion": sandbox.wordpress_version, "phpVersion": sandbox.php_version},
            "metadata": document["metadata"],
            "database": document.get("database"),
            "files": document.get("files"),
            "hashes": {"database": "", "files": ""},
        },
        "the runtime snapshot",
    )
    return with_hashes(snapshot)


def _site_scope(sandbox: Sandbox, scope: dict[str, Any]) -> dict[str, Any]:
    """The scope's table globs for this sandbox: ``wp_…`` names its own prefix (docs/site-state.md)."""
    return rebase_scope_tables(scope, PrefixRename(DEFAULT_TABLE_PREFIX, sandbox.table_prefix))


def _snapshot_prefix(snapshot: RuntimeSnapshot) -> str:
    """The table prefix the snapshot's tables carry (``metadata.tablePrefix``); bad input when it is no prefix."""
    found = snapshot.metadata.get("tablePrefix", DEFAULT_TABLE_PREFIX)
    if not isinstance(found, str) or not TABLE_PREFIX_PATTERN.fullmatch(found):
        raise BadInputError(
            f"snapshot {snapshot.id}: metadata.tablePrefix must be letters, digits and underscores ending in '_'",
            code="snapshot-incompatible",
            field="metadata.tablePrefix",
        )
    return found


def with_hashes(snapshot: RuntimeSnapshot) -> RuntimeSnapshot:
    """The snapshot with ``hashes`` computed over its tables and file list as written."""
    payload = snapshot.model_dump(mode="json", by_alias=True, exclude_none=True)
    return snapshot.model_copy(
        update={"hashes": SnapshotHashes(**snapshot_hashes(payload["database"], payload["files"]))}
    )


BLOB_DIR: Final = layout.RUNTIME_SNAPSHOT_BLOBS_DIR


def externalize_files(snapshot: RuntimeSnapshot, write_blob: Callable[[str, bytes], None]) -> RuntimeSnapshot:
    """The snapshot with each file's bytes moved out of the document into a content-addressed blob
    (``write_blob(relative_path, data)``, called once per distinct sha256): a default site's
    wp-content is ~12 MB, more than one bundle file may hold (docs/site-state.md)."""
    written: set[str] = set()
    files = []
    for entry in snapshot.files:
        if entry.base64 is None:
            files.append(entry)
            continue
        rel = f"{BLOB_DIR}/{entry.sha256}"
        if entry.sha256 not in written:
            write_blob(rel, base64.b64decode(entry.base64))
            written.add(entry.sha256)
        files.append(entry.model_copy(update={"base64": None, "blob": rel}))
    return snapshot.model_copy(update={"files": files})


def load_snapshot(bundle_dir: Path, rel: str) -> RuntimeSnapshot:
    """Read a snapshot document of a bundle (hostile input) and put each blob's bytes back inline.
    A blob is found by the file's sha256 only (never by a path the document names) and must hash to it."""
    root = Path(bundle_dir)
    path = root / rel
    snapshot = _bad_input_validated(RuntimeSnapshot, load_json_file(path, rel, limit=512 * 1024 * 1024), rel)
    return inline_blobs(snapshot, root, rel)


def parse_snapshot(data: bytes, source: str) -> RuntimeSnapshot:
    """A snapshot document from bytes the caller has already read (and, for a site, checked against its digest)."""
    return _bad_input_validated(RuntimeSnapshot, parse_json(data, source, code="invalid-snapshot"), source)


def inline_blobs(snapshot: RuntimeSnapshot, root: Path, rel: str) -> RuntimeSnapshot:
    """``snapshot`` with each file's bytes read back from its blob under ``root`` (found by sha256 only, never by a
    path the document names, and checked to hash to it)."""
    files = []
    for index, entry in enumerate(snapshot.files):
        if entry.base64 is None:
            blob = root / BLOB_DIR / entry.sha256
            try:
                data = read_regular(blob, entry.bytes)
            except (OSError, UnsafeFileError) as error:
                raise BadInputError(
                    f"{rel}: files[{index}] ({entry.path}): its blob {BLOB_DIR}/{entry.sha256} cannot be read: {error}",
                    code="snapshot-blob-missing",
                    field=f"files[{index}]",
                ) from None
            if sha256_hex(data) != entry.sha256:
                raise BadInputError(
                    f"{rel}: files[{index}] ({entry.path}): its blob does not hash to its sha256",
                    code="snapshot-digest-mismatch",
                    field=f"files[{index}]",
                )
            entry = entry.model_copy(update={"base64": base64.b64encode(data).decode("ascii"), "blob": None})
        files.append(entry)
    return snapshot.model_copy(update={"files": files})


def _bad_input_validated(model: type[M], value: Any, source: str) -> M:
    try:
        return model.model_validate(value)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise BadInputError(
            f"{source}: {where or '(root)'}: {first['msg']}", code="invalid-snapshot", field=where or source
        ) from None


def check_compatible(snapshot: RuntimeSnapshot, sandbox: Sandbox) -> None:
    """Refuse a snapshot from another WordPress or PHP version (restoring it would corrupt the site)."""
    want = SnapshotCompatibility(wordpressVersion=sandbox.wordpress_version, phpVersion=sandbox.php_version)
    have = snapshot.compatibility
    for field in ("backend", "wordpressVersion", "phpVersion"):
        if getattr(have, field) != getattr(want, field):
            raise BadInputError(
                f"snapshot {snapshot.id} was taken on {field} {getattr(have, field)}, this sandbox runs "
                f"{getattr(want, field)}; restore it into a sandbox with the same backend, WordPress and PHP",
                code="snapshot-incompatible",
                field=f"compatibility.{field}",
            )


def restore_snapshot(sandbox: Sandbox, snapshot: RuntimeSnapshot, *, timeout_s: float = 120.0) -> dict[str, Any]:
    """Restore ``snapshot`` into the sandbox: its tables replace those in scope, its files those under
    wp-content in scope (files added since are deleted). Returns the PHP side's stats."""
    check_compatible(snapshot, sandbox)
    payload = snapshot.model_dump(mode="json", by_alias=True, exclude_none=True)
    payload["files"] = [{k: v for k, v in f.items() if k != "blob"} for f in payload["files"]]
    if snapshot_hashes(payload["database"], payload["files"]) != snapshot.hashes.model_dump():
        raise BadInputError(
            f"snapshot {snapshot.id}: its tables or file list do not match its hashes",
            code="snapshot-digest-mismatch",
            field="hashes",
        )
    for index, entry in enumerate(snapshot.files):
        if entry.base64 is None or sha256_hex(base64.b64decode(entry.base64)) != entry.sha256:
            raise BadInputError(
                f"snapshot {snapshot.id}: files[{index}] ({entry.path}) has no content or its "
                "bytes do not match its sha256",
                code="snapshot-digest-mismatch",
                field=f"files[{index}]",
            )
    # a snapshot from another native sandbox carries that one's table prefix: moved to this sandbox's own
    payload = rebase_snapshot_tables(payload, PrefixRename(_snapshot_prefix(snapshot), sandbox.table_prefix))
    target = f"/tmp/codebox-restore-{secrets.token_hex(6)}.json"
    sandbox.write_file(target, json.dumps(payload).encode("utf-8"), timeout_s)
    try:
        value = _run(sandbox, {"action": "restore", "readFrom": target}, timeout_s)
    finally:
        _run_quiet(sandbox, f"<?php @unlink('{target}');")
    stats: dict[str, Any] = value.get("stats") or {}
    return stats


def _run_quiet(sandbox: Sandbox, code: str) -> None:
    try:
        sandbox.probe_php(code, 30.0)
    except SandboxError:
        pass


# -- checkpoints ----------------------------------------------------------------------------------
def check_checkpoint_name(name: str) -> str:
    if not CHECKPOINT_NAME.fullmatch(name):
        raise BadInputError(
            f"checkpoint name {name!r} must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
            code="invalid-arg",
            field="name",
        )
    return name


def checkpoint_create(
    sandbox: Sandbox,
    name: str,
    scope: dict[str, Any],
    *,
    metadata: dict[str, Any] | None = None,
    timeout_s: float = 120.0,
) -> CheckpointResult:
    """Snapshot the site into the sandbox under ``name`` (replacing a checkpoint of that name); file
    bytes go to a content-addressed store beside it, so nothing crosses to the host."""
    check_checkpoint_name(name)
    meta = {
        "name": name,
        "snapshotId": f"runtime-snapshot-{secrets.token_hex(8)}",
        "createdAt": utc_now_iso(),
        **({"metadata": metadata} if metadata else {}),
    }
    value = _run(
        sandbox,
        {
            "action": "snapshot",
            "scope": _site_scope(sandbox, scope),
            "content": "blobs",
            "blobDir": f"{CHECKPOINT_DIR}/blobs",
            "writeTo": f"{CHECKPOINT_DIR}/{name}.json",
            "checkpointMeta": meta,
            "checkpointMetaPath": f"{CHECKPOINT_DIR}/{name}.meta.json",
        },
        timeout_s,
    )
    checkpoint = _validated(Checkpoint, {**meta, "summary": value.get("stats")}, "the checkpoint")
    return CheckpointResult(status="created", operation="create", checkpoint=checkpoint)


def checkpoint_restore(sandbox: Sandbox, name: str, *, timeout_s: float = 120.0) -> CheckpointResult:
    check_checkpoint_name(name)
    value = _run(
        sandbox,
        {
            "action": "restore",
            "readFrom": f"{CHECKPOINT_DIR}/{name}.json",
            "blobDir": f"{CHECKPOINT_DIR}/blobs",
            "checkpointName": name,
            "checkpointMetaPath": f"{CHECKPOINT_DIR}/{name}.meta.json",
            "restoredAt": utc_now_iso(),
            "checkpointDir": CHECKPOINT_DIR,
        },
        timeout_s,
    )
    meta = value.get("meta")
    if not isinstance(meta, dict):
        raise SandboxError(f"checkpoint {name}: the sandbox returned no checkpoint record", code="site-state-malformed")
    checkpoint = _validated(
        Checkpoint,
        {**meta, "summary": {**(meta.get("summary") or {}), "restore": value.get("stats")}},
        "the checkpoint",
    )
    return CheckpointResult(status="restored", operation="restore", checkpoint=checkpoint)


def checkpoint_list(sandbox: Sandbox, *, timeout_s: float = 60.0) -> CheckpointResult:
    value = _run(sandbox, {"action": "checkpoint-list", "checkpointDir": CHECKPOINT_DIR}, timeout_s)
    items = value.get("checkpoints")
    if not isinstance(items, list):
        raise SandboxError("checkpoint list: the sandbox returned no list", code="site-state-malformed")
    return CheckpointResult(
        status="listed", operation="list", checkpoints=[_validated(Checkpoint, item, "a checkpoint") for item in items]
    )
