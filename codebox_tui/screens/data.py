"""What the screens read and write, in one Textual-free place: the store and bundles on disk.
The UI writes nothing itself: decisions go through ``store``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codebox_tui.bundle import layout
from codebox_tui.bundle.reader import LoadedBundle, load_bundle
from codebox_tui.bundle.results import BundleChecks
from codebox_tui.bundle.results import bundle_checks as read_checks
from codebox_tui.bundle.safe_read import loads_limited, read_regular
from codebox_tui.contracts.apply import ApplyResult
from codebox_tui.contracts.apply import Decision as Decision
from codebox_tui.contracts.bundle import ChangedFile, TestResults
from codebox_tui.errors import BadInputError
from codebox_tui.sites.store import site_rows
from store import threeway
from store.apply import apply_decision
from store.batches import BatchItemRecord as BatchItemRecord
from store.batches import BatchRecord as BatchRecord
from store.batches import batch_items, get_batch, list_batches
from store.batches import promote as store_promote
from store.changed_names import ChangedFileNames
from store.comments import Comment as Comment
from store.comments import add_comment as store_add_comment
from store.comments import delete_comment as store_delete_comment
from store.comments import edit_comment as store_edit_comment
from store.comments import list_comments
from store.compare import Comparison
from store.compare import compare as store_compare
from store.content import read_content
from store.db import OUTPUT_ONLY_LABEL as OUTPUT_ONLY_LABEL
from store.db import OUTPUT_ONLY_STATUS as OUTPUT_ONLY_STATUS
from store.db import BundleRecord, output_only_reason
from store.db import Store as Store
from store.decisions import decide_on, default_approver, record_content, register_bundle, resolve_bundle
from store.feedback import FeedbackFiles, record_iterate_feedback
from store.feedback import export_feedback as store_export_feedback
from store.inbox import FILTERS as FILTERS
from store.inbox import SORTS as SORTS
from store.inbox import InboxRow as InboxRow
from store.inbox import decision_warning as warning_for
from store.inbox import discard_bundles, inbox_rows
from store.inbox import group_batches as group_batches
from store.inbox import import_bundles as store_import
from store.inbox import select_rows as select_rows
from store.revisions import FileInterdiff, Revision, bundle_interdiff, carried_comments, revisions

# JSON as read from a bundle or written by an adapter: checked where it is used, never trusted by shape
JSONObject = dict[str, Any]


def open_store() -> Store:
    return Store.open()


def register(store: Store, bundle_dir: Path, run_id: str | None = None) -> BundleRecord:
    return register_bundle(store, Path(bundle_dir), run_id=run_id)


def import_bundles(store: Store, folder: Path) -> tuple[list[BundleRecord], list[JSONObject]]:
    """Verify and record the bundle at ``folder`` (or the bundles under it): (imported, rejected)."""
    report = store_import(store, Path(folder).expanduser())
    return report.imported, report.rejected


def load(bundle_dir: Path) -> LoadedBundle:
    return load_bundle(bundle_dir)


def changed_file_names(entries: list[ChangedFile]) -> ChangedFileNames:
    """How the store names each changed file (a relativePath two mounts change: by sandbox path)."""
    return ChangedFileNames(entries)


def decide(
    store: Store,
    bundle_dir: Path,
    action: str,
    *,
    files: list[str] | None = None,
    reason: str = "",
    hunks: dict[str, list[int]] | None = None,
) -> Decision:
    """Record a decision (registering the bundle first if the store has not seen it); ``hunks`` approves
    files in part (relativePath → 1-based hunk numbers, docs/contracts.md "Hunk selection")."""
    # verified and read once: this directory's own record (a Mode A id may be shared) and the decision both
    # take the same content, so a decision hashes each file of the bundle once
    content = read_content(Path(bundle_dir))
    record = record_content(store, Path(bundle_dir), content)
    decision = decide_on(
        store, record, action, approver=current_user(), reason=reason, files=files, hunks=hunks, content=content
    )
    record_iterate_feedback(store, decision)  # iterate: the open comments are recorded, feedback written
    return decision


def apply(store: Store, decision_id: int, adapter: str, target: str) -> ApplyResult:
    return apply_decision(store, decision_id, adapter, target)


def three_way_summary(result: JSONObject) -> str | None:
    """The merged/conflicting counts of a three-way apply (docs/contracts.md, "Three-way apply"), or None."""
    target = result.get("target")
    return threeway.summary(target.get("three_way")) if isinstance(target, dict) else None


def refusal_hint(error: BaseException) -> str | None:
    """The hint a refused apply carries (a three-way conflict's counts, or how to merge), or None."""
    details = getattr(error, "details", None)
    hint = details.get("hint") if isinstance(details, dict) else None
    return hint if isinstance(hint, str) else None


def current_user() -> str:
    """Who the TUI records as deciding or commenting: the one rule the CLI and MCP use too (the ``approver``
    setting, ``CODEBOX_APPROVER``, else the user Codebox runs as)."""
    return default_approver(None)


EVALUATION_FILE = layout.EVALUATE_PATCH


def patch_evaluation(bundle_dir: Path) -> tuple[JSONObject | None, str | None]:
    """The ``codebox evaluate-patch`` result carried by a bundle: ``(evaluation, problem)``.

    ``(None, None)`` when the bundle is not from evaluate-patch; a problem message when the file is
    there but unreadable or not the expected shape."""
    path = Path(bundle_dir) / EVALUATION_FILE
    if not path.is_file():
        return None, None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return None, f"{EVALUATION_FILE} is not readable JSON ({error})"
    tests = doc.get("tests") if isinstance(doc, dict) else None
    if not isinstance(tests, dict) or not isinstance(tests.get("verdict"), str):
        return None, f"{EVALUATION_FILE} has no tests.verdict (expected the patch-evaluation/v1 shape)"
    return doc, None


def bundle_checks(bundle_dir: Path, test_results: TestResults | JSONObject) -> BundleChecks:
    """Tests (per side), probes and a recipe run's verdict: ``codebox_tui/bundle/results.py``."""
    return read_checks(bundle_dir, test_results)


def status_warning(status: str) -> str | None:
    """A warning to show before a new decision on a bundle recorded with ``status`` (discarded, applied)."""
    return warning_for(status)


def output_only(ref: str, status: str) -> str | None:
    """Why a bundle recorded with ``status`` takes no decision (it is output only), else None."""
    return output_only_reason(ref, status)


def decision_warning(bundle_dir: Path) -> str | None:
    """A warning to show before a new decision on a bundle the store has as discarded or applied."""
    store = open_store()
    try:
        record = store.find_bundle_at(Path(bundle_dir))
    finally:
        store.close()
    return warning_for(record.status) if record is not None else None


def no_decision_reason(store: Store, bundle_dir: Path) -> str | None:
    """Why the decision keys cannot act on this bundle directory: it is recorded as output only (None else)."""
    record = store.find_bundle_at(Path(bundle_dir).expanduser().resolve())
    return output_only_reason(record.ref, record.status) if record is not None else None


# -- review comments and feedback (store/comments.py, store/feedback.py) -------------------------------
def comments(store: Store, bundle_dir: Path) -> list[Comment]:
    """This bundle directory's comments (its own record), in reading order."""
    record = store.find_bundle_at(Path(bundle_dir).expanduser().resolve())  # never registers: opening is not recording
    return list_comments(store, record.key) if record is not None else []


def add_comment(
    store: Store, bundle_dir: Path, *, path: str, kind: str, body: str, lines: tuple[str, int, int] | None = None
) -> Comment:
    """A file comment (``lines`` None) or a line/range comment ``(side, first, last)``."""
    record = register(store, bundle_dir)
    side, start, end = lines if lines is not None else ("new", None, None)
    return store_add_comment(
        store, record, path=path, kind=kind, body=body, author=current_user(), line_start=start, line_end=end, side=side
    )


def edit_comment(store: Store, comment_id: int, *, kind: str, body: str) -> Comment:
    return store_edit_comment(store, comment_id, body=body, kind=kind)


def delete_comment(store: Store, comment_id: int) -> Comment:
    return store_delete_comment(store, comment_id)


def export_feedback(store: Store, bundle_dir: Path) -> FeedbackFiles:
    """Write feedback.md/feedback.json next to the bundle."""
    return store_export_feedback(store, register(store, bundle_dir))


@dataclass
class RevisionView:
    """The revisions of the review a bundle directory belongs to (``store.revisions``)."""

    revisions: list[Revision]  # oldest first
    number: int  # this bundle's revision number
    base: Revision | None  # the revision the interdiff starts from (the latest one decided on before this)
    interdiff: list[FileInterdiff]
    carried: list[Comment]  # comments of earlier revisions, ``outdated`` marked

    def number_of(self, bundle_key: int) -> int:
        return next((r.number for r in self.revisions if r.bundle.key == bundle_key), 0)


def revision_view(store: Store, bundle_dir: Path) -> RevisionView | None:
    """None unless the bundle is recorded and its review has more than one revision."""
    record = store.find_bundle_at(Path(bundle_dir).expanduser().resolve())
    if record is None:
        return None
    chain = revisions(store, record)
    if len(chain) < 2:
        return None
    number = next(r.number for r in chain if r.bundle.key == record.key)
    earlier = [r for r in chain if r.number < number]
    decided = [r for r in earlier if r.decision is not None]
    base = (decided or earlier)[-1] if earlier else None
    files = bundle_interdiff(base.bundle, record) if base is not None else []
    return RevisionView(chain, number, base, files, carried_comments(store, record))


def compare(store: Store, bundle_dir: Path, other: str) -> Comparison:
    """This bundle against ``other`` (``@key``, a run id, a unique prefix or a bundle folder): a
    ``store.compare.Comparison``. Both are recorded (a comparison names them by ``@key``)."""
    return store_compare(store, register(store, bundle_dir), resolve_bundle(store, other))


# -- Home's inbox and the batches (store/inbox.py, store/batches.py) ----------------------------------
def inbox(store: Store) -> list[InboxRow]:
    """Every recorded bundle as Home lists it (what each row says is computed in ``store/inbox.py``)."""
    return inbox_rows(store)


def discard(store: Store, keys: list[int]) -> list[Decision]:
    """Record a discard decision on each of the bundles ``keys`` (by the current user)."""
    return discard_bundles(store, keys, approver=current_user())


def promote(store: Store, batch_id: str, bundle_key: int) -> None:
    """Promote the candidate ``bundle_key`` of ``batch_id`` for review (one per batch)."""
    store_promote(store, batch_id, bundle_key)


@dataclass
class BatchSnapshot:
    """The batch ids, the batch shown (the one asked for while it exists, else the first) and its items."""

    ids: list[str]
    batch: BatchRecord | None
    items: list[BatchItemRecord]


def batch_snapshot(wanted: str | None) -> BatchSnapshot:
    with Store.open() as store:
        batches = list_batches(store)
        ids = [b.batch_id for b in batches]
        chosen = wanted if wanted in ids else (ids[0] if ids else None)
        batch = get_batch(store, chosen) if chosen else None
        items = batch_items(store, chosen) if chosen else []
    return BatchSnapshot(ids, batch, items)


def bundle_path(key: int) -> str | None:
    """The directory of the bundle the store records as ``@key``; None when it is no longer recorded."""
    with Store.open() as store:
        try:
            return store.get_bundle_by_key(key).path
        except BadInputError:
            return None


# -- a command's output on the Live run screen ---------------------------------------------------
MAX_COMMANDS_FILE = 64 * 1024 * 1024  # commands.jsonl read for the output view (a bundle may be foreign)
MAX_SHOWN_OUTPUT = 200_000  # characters of each stream shown; the rest is in the bundle


def command_output(run_dir: Path, event: object) -> tuple[str, str] | None:
    """Title and text of the stdout/stderr of the command an event names (``data.id`` of a ``command.*``
    event), else of the run's last command; None when the run has no command yet."""
    try:
        raw = read_regular(Path(run_dir) / layout.COMMANDS, MAX_COMMANDS_FILE)
    except OSError:
        return None
    entries = []
    for line in raw.decode("utf-8", errors="replace").splitlines():
        try:
            item = loads_limited(line)
        except ValueError:
            continue
        if isinstance(item, dict):
            entries.append(item)
    if not entries:
        return None
    data = event.get("data") if isinstance(event, dict) else None
    wanted = data.get("id") if isinstance(data, dict) else None
    entry = next((e for e in entries if wanted is not None and e.get("id") == wanted), entries[-1])

    def stream(name: str) -> str:
        text = str(entry.get(name) or "")
        if len(text) > MAX_SHOWN_OUTPUT:
            return (
                f"… {len(text) - MAX_SHOWN_OUTPUT} characters cut (the whole output is in the bundle)\n"
                + text[-MAX_SHOWN_OUTPUT:]
            )
        return text or "(empty)"

    title = f"{entry.get('command', '?')} — exit {entry.get('exitCode', '?')}"
    return title, f"stdout\n──────\n{stream('stdout')}\n\nstderr\n──────\n{stream('stderr')}"


def prepared_sites() -> list[Any]:
    """The contained sites kept under $CODEBOX_HOME/sites, newest first (codebox_tui/sites/store.py, SiteRow)."""
    return list(site_rows())
