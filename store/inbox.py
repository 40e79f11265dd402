"""The review inbox: every captured bundle is recorded, and bundles made elsewhere can be imported.

:func:`record_run` is what every command that captures a bundle calls (``run``, ``recipe-run``,
``evaluate-patch``, runs from the TUI), so none of them drifts. :func:`import_bundles` adds bundles
produced elsewhere (another machine, the reference implementation): each is verified first and only
a valid bundle is recorded (fails closed); nothing is moved or copied (README "Review and decide").
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from codebox_tui.bundle import layout
from codebox_tui.bundle.results import bundle_checks
from codebox_tui.bundle.safe_read import load_json_file, open_regular
from codebox_tui.contracts.bundle_read import MetadataView, ReviewView
from codebox_tui.contracts.common import utc_now_iso
from codebox_tui.errors import BadInputError, CodeboxError
from codebox_tui.textsafe import safe_text
from store.batches import batch_of_bundles, promoted_keys
from store.db import OUTPUT_ONLY_STATUS, BundleRecord, Store
from store.decisions import decide_on, register_bundle

MAX_DEPTH = 2  # like the reference's artifact list: manifest.json at depth 0, 1 and 2 under a root


def record_run(
    *,
    run_id: str,
    run_dir: Path,
    status: str,
    bundle_dir: Path | None,
    metadata: dict[str, Any] | None = None,
    sandbox_session_id: str | None = None,
    started_at: str | None = None,
    bundle_id: str | None = None,
    content_digest: str | None = None,
    changed_files: int = 0,
    output_only: bool = False,
    store: Store | None = None,
) -> BundleRecord | None:
    """Record a run and the bundle it captured (if any) in the store.

    With ``bundle_id`` and ``content_digest`` from the capture itself the bundle is recorded as is;
    otherwise it is verified and read from disk first. ``output_only``: the run had nothing to decide
    (lifecycle/informational.nothing_to_decide), so the bundle is recorded as ``OUTPUT_ONLY_STATUS``.
    """
    own = store is None
    db = Store.open() if store is None else store
    try:
        db.record_run(
            run_id,
            status="running",
            artifacts_dir=run_dir,
            sandbox_session_id=sandbox_session_id,
            metadata=metadata or {},
            started_at=started_at,
        )
        record: BundleRecord | None = None
        if bundle_dir is not None and (bundle_dir / layout.MANIFEST).is_file():
            if bundle_id and content_digest:
                record = db.record_bundle(
                    bundle_id,
                    path=bundle_dir,
                    content_digest=content_digest,
                    run_id=run_id,
                    changed_files=changed_files,
                    status=OUTPUT_ONLY_STATUS if output_only else "pending",
                )
            else:
                record = register_bundle(db, bundle_dir, run_id=run_id)
        db.update_run(run_id, status=status, finished_at=utc_now_iso(), bundle_id=record.bundle_id if record else None)
        return record
    finally:
        if own:
            db.close()


def record_run_best_effort(warn: Any = None, **kwargs: Any) -> BundleRecord | None:
    """:func:`record_run`, reporting a failure through ``warn(message)`` instead of raising: the
    bundle on disk is the evidence, and it can still be added with ``codebox review import``."""
    try:
        return record_run(**kwargs)
    except (CodeboxError, OSError) as error:
        if warn is not None:
            warn(f"warning: the run was not recorded in the review inbox: {error}")
        return None


@dataclass
class ImportReport:
    imported: list[BundleRecord] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)  # {path, code, message, violations?}


def find_bundle_dirs(root: Path) -> list[Path]:
    """``root`` itself if it is a bundle, else bundles up to :data:`MAX_DEPTH` folders below it. Folders
    reached through a symlink are skipped: only what really lies under ``root`` is imported."""
    if (root / layout.MANIFEST).is_file():
        return [root]
    real_root = root.resolve()
    found: list[Path] = []
    for depth in range(1, MAX_DEPTH + 1):
        pattern = "/".join([*["*"] * depth, layout.MANIFEST])
        for manifest in root.glob(pattern):
            folder = manifest.parent
            rel = folder.relative_to(root)
            if any((root / Path(*rel.parts[: i + 1])).is_symlink() for i in range(len(rel.parts))):
                continue
            if manifest.is_file() and folder.resolve().is_relative_to(real_root):
                found.append(folder)
    return sorted(set(found))


def import_bundles(store: Store, root: Path) -> ImportReport:
    """Verify and record every bundle at or under ``root`` (never moved). Invalid ones are reported."""
    base = root.expanduser()
    if not base.is_dir():
        raise BadInputError(
            f"{root} is not a folder; expected a bundle folder (holding manifest.json) or a folder of bundles",
            code="import-missing",
            field="DIR",
        )
    dirs = find_bundle_dirs(base)
    if not dirs:
        raise BadInputError(
            f"no bundle (manifest.json) at or up to {MAX_DEPTH} folders below {root}", code="import-empty", field="DIR"
        )
    report = ImportReport()
    for bundle_dir in dirs:
        try:
            report.imported.append(register_bundle(store, bundle_dir, origin="import"))
        except CodeboxError as error:
            entry: dict[str, Any] = {"path": str(bundle_dir), "code": error.code, "message": error.message}
            if error.details and error.details.get("violations"):
                entry["violations"] = error.details["violations"]
            report.rejected.append(entry)
    return report


# -- the inbox as Home shows it (docs/architecture.md, "Additions (as built)") ---------------------------

FILTERS = ("all", "pending", "approved", "applied", "discarded", "iterate", "output-only")
SORTS = ("newest", "oldest", "title", "verdict", "files")
SOURCES = ("run", "recipe", "evaluate-patch", "imported")
# a bundle whose approval was applied is still approved: the `approved` filter shows it
FILTER_STATUSES = {
    "pending": ("pending",),
    "approved": ("approved", "applied"),
    "applied": ("applied",),
    "discarded": ("discarded",),
    "iterate": ("iterate",),
    "output-only": (OUTPUT_ONLY_STATUS,),
}
# how good the outcome looks, worst first (the `verdict` sort)
VERDICT_RANK = {
    "regression": 0,
    "plugin-broken": 0,
    "failed": 0,
    "untested": 1,
    "unknown": 1,
    "no tests": 2,
    "still-failing": 1,
    "partial": 1,
    "neutral": 3,
    "passed": 4,
    "improvement": 5,
}
MAX_TITLE = 120


@dataclass(frozen=True)
class InboxRow:
    """One bundle in the inbox, with what a reviewer triages by. Every text is terminal-safe."""

    key: int
    bundle_id: str
    path: str
    status: str  # the store's: pending, approved, applied, discarded, iterate
    decision: str  # the latest decision's action ("" for none)
    source: str  # run | recipe | evaluate-patch | imported
    title: str  # plugin / recipe / command
    verdict: str  # improvement, regression, passed, failed, …, or "no tests"
    delta: str  # tests passed: "1/2 → 2/2" (before → after a patch), "5/5", "" when none ran
    warnings: int  # a recipe run's warnings (advisory / allowFailure failures)
    risk_flags: tuple[str, ...]
    changed: int
    created_at: str
    batch: str = ""  # the batch or fan-out that produced it (store/batches.py), "" for none
    batch_item: str = ""  # its item id in that batch
    promoted: bool = False  # the candidate of its batch promoted for review

    def haystack(self) -> str:
        return " ".join(
            (
                self.title,
                self.source,
                self.verdict,
                self.status,
                self.decision,
                self.bundle_id,
                self.path,
                self.batch,
                self.batch_item,
                *self.risk_flags,
            )
        ).lower()


def _small_json(path: Path) -> dict[str, Any]:
    """A bundle file as a JSON object, or {} (missing, unreadable, hostile): the inbox never fails on one."""
    try:
        data = load_json_file(path, str(path), limit=8 * 1024 * 1024)
    except CodeboxError:
        return {}
    return data if isinstance(data, dict) else {}


def _first_commands(bundle: Path, limit: int = 3) -> list[str]:
    """The first distinct commands the run executed (``commands.jsonl``, first 64 KiB only)."""

    try:
        fd = open_regular(bundle / "commands.jsonl")
    except OSError:
        return []
    try:
        head = os.read(fd, 64 * 1024).decode("utf-8", errors="replace")
    finally:
        os.close(fd)
    names: list[str] = []
    for line in head.splitlines():
        try:
            command = json.loads(line).get("command")
        except (ValueError, AttributeError):
            continue
        if isinstance(command, str) and command not in names:
            names.append(command)
        if len(names) >= limit:
            break
    return names


def _patch_title(plugin: str, patch: str) -> str:
    """``plugin + patch`` without what repeats: ``buggy-counter + fix`` for buggy-counter-fix.patch."""
    stem = patch.removesuffix(".patch").removesuffix(".diff")
    rest = stem.removeprefix(plugin).lstrip("-_. ") if stem.startswith(plugin) else stem
    return f"{plugin} + {rest or stem}"


# The source of a plain run, by the flow that recorded it (RunRequest.flow): what the inbox calls it.
FLOW_SOURCES = {"agent-task": "agent", "exec": "exec", "episode": "episode", "mcp": "mcp", "boot": "boot"}


def describe_bundle(record: BundleRecord, flow: str | None = None) -> InboxRow:
    """Source, title, verdict and test delta, and risk flags of one recorded bundle, read from its small
    JSON files (never verified here: opening a bundle for review verifies it). ``flow`` is the flow that
    recorded the run (``agent-task``, ``exec``, …), when the store knows it."""
    root = Path(record.path)
    tests = _small_json(root / layout.TEST_RESULTS)
    review = ReviewView.read(_small_json(root / layout.REVIEW))
    checks = bundle_checks(root, tests)
    evaluation = _small_json(root / layout.EVALUATE_PATCH) if checks.kind == "evaluate-patch" else {}
    attestation = _small_json(root / layout.RUN_ATTESTATION) if checks.kind == "recipe-run" else {}
    flags = review.riskFlags
    if checks.kind == "evaluate-patch":
        title = _patch_title(str(evaluation.get("plugin") or "?"), str(evaluation.get("patch") or "?"))
        verdict = checks.patch_verdict or "unknown"
    elif checks.kind == "recipe-run":
        named = attestation.get("recipe")
        recipe: dict[str, Any] = named if isinstance(named, dict) else {}
        title = Path(str(recipe.get("path") or "recipe")).stem
        verdict = checks.verdict.status if checks.verdict else "unknown"
    else:
        mounts = MetadataView.read(_small_json(root / layout.METADATA)).mounts
        name = Path((mounts[0].target or mounts[0].source) if mounts else "").name
        goal = _small_json(root / layout.TASK_INPUT).get("goal")
        if isinstance(goal, str) and goal.strip():  # an agent task: what it was asked, not its tool calls
            flow = flow or "agent-task"
            doing = "agent: " + " ".join(goal.split())
        else:
            doing = ", ".join(_first_commands(root))
        title = " · ".join([n for n in (name, doing) if n]) or "run"
        verdict = ""
    sides = {t.side: t for t in checks.tests}
    if "before" in sides and "after" in sides:
        b, a = sides["before"], sides["after"]
        delta = f"{b.passed}/{b.total} → {a.passed}/{a.total}"
    elif "all" in sides:
        delta = f"{sides['all'].passed}/{sides['all'].total}"
        verdict = verdict or sides["all"].status
    else:
        delta = ""
    source = (
        "imported"
        if record.origin == "import"
        else {"evaluate-patch": "evaluate-patch", "recipe-run": "recipe"}.get(checks.kind)
        or FLOW_SOURCES.get(flow or "", "run")
    )
    return InboxRow(
        key=record.key,
        bundle_id=record.bundle_id,
        path=record.path,
        status=record.status,
        decision="",
        source=source,
        title=safe_text(title)[:MAX_TITLE],
        verdict=safe_text(verdict or "no tests"),
        delta=safe_text(delta),
        warnings=len(checks.verdict.warnings) if checks.verdict else 0,
        risk_flags=tuple(safe_text(f) for f in flags[:50]),
        changed=record.changed_files,
        created_at=record.created_at,
    )


def inbox_rows(store: Store) -> list[InboxRow]:
    """Every recorded bundle, described (newest first), with its latest decision and its batch."""

    batches, promoted = batch_of_bundles(store), promoted_keys(store)
    rows = []
    for record in store.list_bundles():
        latest = store.latest_decision(record.key)
        batch, item = batches.get(record.key, ("", ""))
        described = describe_bundle(record, flow_of(store, record))
        rows.append(
            replace(
                described,
                decision=latest.action if latest else "",
                batch=batch,
                batch_item=item,
                promoted=record.key in promoted,
            )
        )
    return rows


def flow_of(store: Store, record: BundleRecord) -> str | None:
    """The flow that recorded the bundle's run (``RunRequest.flow`` in the run's metadata), if known."""
    if not record.run_id:
        return None
    try:
        flow = store.get_run(record.run_id).metadata.get("flow")
    except CodeboxError:
        return None
    return flow if isinstance(flow, str) else None


def batch_groups(rows: list[InboxRow]) -> dict[str, list[InboxRow]]:
    """The rows of each batch or fan-out, by batch id, in the order given (rows of no batch are left out)."""
    groups: dict[str, list[InboxRow]] = {}
    for row in rows:
        if row.batch:
            groups.setdefault(row.batch, []).append(row)
    return groups


def group_batches(rows: list[InboxRow]) -> list[InboxRow]:
    """``rows`` in their order, except that the candidates of one batch follow each other, where the first of
    them stands (the inbox shows a batch or fan-out as one block)."""
    groups = batch_groups(rows)
    out: list[InboxRow] = []
    placed: set[str] = set()
    for row in rows:
        if not row.batch:
            out.append(row)
        elif row.batch not in placed:
            placed.add(row.batch)
            out.extend(groups[row.batch])
    return out


def select_rows(rows: list[InboxRow], *, status: str = "all", text: str = "", sort: str = "newest") -> list[InboxRow]:
    """The rows a filter (``FILTERS``), a text search (every word, case-insensitive, in the title, source,
    verdict, decision, flags, id or path) and a sort (``SORTS``) leave, in order."""
    if status not in FILTERS:
        raise BadInputError(
            f"unknown filter {status!r}; expected one of {', '.join(FILTERS)}", code="invalid-filter", field="filter"
        )
    if sort not in SORTS:
        raise BadInputError(
            f"unknown sort {sort!r}; expected one of {', '.join(SORTS)}", code="invalid-sort", field="sort"
        )
    kept = [r for r in rows if status == "all" or r.status in FILTER_STATUSES[status]]
    words = text.lower().split()
    kept = [r for r in kept if all(w in r.haystack() for w in words)]
    newest = sorted(kept, key=lambda r: (r.created_at, r.key), reverse=True)
    if sort == "oldest":
        return newest[::-1]
    if sort == "title":
        return sorted(newest, key=lambda r: r.title.lower())
    if sort == "verdict":
        return sorted(newest, key=lambda r: VERDICT_RANK.get(r.verdict, 1))
    if sort == "files":
        return sorted(newest, key=lambda r: -r.changed)
    return newest


def decision_warning(status: str) -> str | None:
    """What to tell a reviewer before a new decision on a bundle already discarded or applied."""
    if status == "applied":
        return "This bundle was already applied: a new decision does not undo the files written."
    if status == "discarded":
        return "This bundle was already discarded: a new decision replaces that one."
    return None


def discard_bundles(store: Store, keys: list[int], *, approver: str, reason: str = "") -> list[Any]:
    """Record a ``discard`` decision for each bundle (store keys), each bound to its content digest.
    Stops at the first refusal (e.g. a bundle changed on disk), keeping the decisions already made."""
    return [decide_on(store, store.get_bundle_by_key(key), "discard", approver=approver, reason=reason) for key in keys]
