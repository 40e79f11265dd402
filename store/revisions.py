"""Revisions of one review: a later bundle for the same change is the next revision (issue #15).

A bundle revises an earlier one when linked explicitly (``codebox review link NEW --revises OLD``, stored in
the ``revisions`` table), or else automatically: the newest earlier bundle whose run had the same
``sandbox_session_id``, or the same ``plugin`` and ``task`` in its run metadata (what the caller passed
to ``codebox run``). Revision 1 is the oldest of the chain.

The **interdiff** between two revisions is computed from the two bundles' patches with the one patch
parser (codebox_tui/bundle/patchparse.py): per file, a diff of the two patches' hunk lines (a line
``+ +x`` is an added line new in the later revision, ``- +x`` an added line it dropped), so it needs
neither bundle's baseline. Comments written on an earlier revision are carried over and marked
**outdated** where the lines they name no longer read the same in the later revision.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codebox_tui.bundle import layout
from codebox_tui.bundle.patchparse import parse_section, split_sections
from codebox_tui.contracts.apply import Decision
from codebox_tui.contracts.common import utc_now_iso
from codebox_tui.errors import BadInputError
from store.comments import Comment, anchor_lines, file_lines, list_comments
from store.content import read_evidence, read_verified
from store.db import BundleRecord, Store

LINK_HOWS = ("explicit", "session", "task")
TEST_RESULTS = layout.TEST_RESULTS
EVALUATION = layout.EVALUATE_PATCH
_SIGN = {"add": "+", "del": "-", "ctx": " ", "nonl": ""}


@dataclass(frozen=True)
class Revision:
    number: int
    bundle: BundleRecord
    how: str | None  # how it was linked to the revision before it (None for revision 1)
    decision: Decision | None
    tests: dict[str, Any] = field(default_factory=dict)  # test-results summary (total, passed, failed, …)
    verdict: str | None = None  # the evaluate-patch verdict, when the bundle has one

    def to_dict(self) -> dict[str, Any]:
        return {
            "revision": self.number,
            "bundleKey": self.bundle.key,
            "bundleId": self.bundle.bundle_id,
            "path": self.bundle.path,
            "contentDigest": self.bundle.content_digest,
            "status": self.bundle.status,
            "linked": self.how,
            "decision": None if self.decision is None else self.decision.action,
            "tests": self.tests,
            "verdict": self.verdict,
        }


# -- links -----------------------------------------------------------------------------------------
def link(store: Store, new: BundleRecord, old: BundleRecord) -> None:
    """Record ``new`` as the next revision of ``old`` (replacing an earlier explicit link of ``new``)."""
    if new.key == old.key:
        raise BadInputError("a bundle cannot revise itself", code="revision-invalid", field="--revises")
    if any(r.bundle.key == new.key for r in chain_before(store, old)):
        raise BadInputError(
            f"{old.ref} is already a later revision of {new.ref}; linking would make a loop",
            code="revision-invalid",
            field="--revises",
        )
    with store.write() as conn:
        conn.execute(
            """INSERT INTO revisions (bundle_key, revises_key, how, linked_at) VALUES (?, ?, 'explicit', ?)
               ON CONFLICT(bundle_key) DO UPDATE SET revises_key = excluded.revises_key, how = 'explicit',
                 linked_at = excluded.linked_at""",
            (new.key, old.key, utc_now_iso()),
        )


class _Links:
    """Every bundle, explicit link and run identity, read once (finding a chain asks for many)."""

    def __init__(self, store: Store) -> None:
        self.bundles = {b.key: b for b in store.list_bundles()}
        self.explicit = {
            int(r["bundle_key"]): (int(r["revises_key"]), str(r["how"]))
            for r in store._query("SELECT bundle_key, revises_key, how FROM revisions")
        }
        runs = {r["run_id"]: r for r in store._query("SELECT run_id, sandbox_session_id, metadata FROM runs")}
        self.identity = {key: _identity(runs.get(b.run_id) if b.run_id else None) for key, b in self.bundles.items()}
        self._memo: dict[int, tuple[BundleRecord, str] | None] = {}

    def previous(self, key: int) -> tuple[BundleRecord, str] | None:
        if key not in self._memo:
            self._memo[key] = self._previous(key)
        return self._memo[key]

    def _previous(self, key: int) -> tuple[BundleRecord, str] | None:
        if key in self.explicit:
            revises, how = self.explicit[key]
            return (self.bundles[revises], how) if revises in self.bundles else None
        session, pair = self.identity.get(key, (None, None))
        if session is None and pair is None:
            return None
        for earlier in sorted((k for k in self.bundles if k < key), reverse=True):
            other_session, other_pair = self.identity[earlier]
            if session is not None and other_session == session:
                return self.bundles[earlier], "session"
            if pair is not None and other_pair == pair:
                return self.bundles[earlier], "task"
        return None


def _identity(row: Any) -> tuple[str | None, tuple[str, str] | None]:
    """A run's ``sandbox_session_id`` and its metadata's ``(plugin, task)`` (either may be None)."""
    if row is None:
        return None, None
    session = row["sandbox_session_id"] or None
    try:
        meta = json.loads(row["metadata"] or "{}")
    except ValueError:
        meta = {}
    plugin, task = (meta.get("plugin"), meta.get("task")) if isinstance(meta, dict) else (None, None)
    pair = (plugin, task) if isinstance(plugin, str) and isinstance(task, str) and plugin and task else None
    return session, pair


def previous(store: Store, bundle: BundleRecord) -> tuple[BundleRecord, str] | None:
    """The revision ``bundle`` revises and how it was linked, or None for a first revision."""
    return _Links(store).previous(bundle.key)


def chain_before(store: Store, bundle: BundleRecord, links: _Links | None = None) -> list[Revision]:
    """``bundle`` and the revisions before it, oldest first (numbers from 1)."""
    links = links or _Links(store)
    found_chain: list[tuple[BundleRecord, str | None]] = [(bundle, None)]
    seen = {bundle.key}
    while True:
        found = links.previous(found_chain[-1][0].key)
        if found is None or found[0].key in seen:
            break
        found_chain[-1] = (found_chain[-1][0], found[1])
        found_chain.append((found[0], None))
        seen.add(found[0].key)
    found_chain.reverse()
    return [_revision(store, i + 1, b, how) for i, (b, how) in enumerate(found_chain)]


def revisions(store: Store, bundle: BundleRecord) -> list[Revision]:
    """Every revision of ``bundle``'s review, oldest first: those before it, it, and later ones."""
    links = _Links(store)
    chain = chain_before(store, bundle, links)
    seen = {r.bundle.key for r in chain}
    while True:
        last = chain[-1].bundle.key
        later = [
            (links.bundles[k], found[1])
            for k in links.bundles
            if k not in seen and (found := links.previous(k)) is not None and found[0].key == last
        ]
        if not later:
            return chain
        nxt, how = max(later, key=lambda pair: pair[0].key)
        chain.append(_revision(store, len(chain) + 1, nxt, how))
        seen.add(nxt.key)


def _revision(store: Store, number: int, bundle: BundleRecord, how: str | None) -> Revision:
    tests, verdict = bundle_tests(Path(bundle.path))
    return Revision(number, bundle, how, store.latest_decision(bundle.key), tests, verdict)


def bundle_tests(bundle_dir: Path) -> tuple[dict[str, Any], str | None]:
    """A bundle's test summary and evaluate-patch verdict, read defensively (sandbox-written files)."""
    summary: dict[str, Any] = {}
    verdict = None
    try:
        doc = json.loads(read_evidence(bundle_dir, TEST_RESULTS))
        raw = doc.get("summary") if isinstance(doc, dict) else None
        if isinstance(raw, dict):
            summary = {k: raw[k] for k in ("total", "passed", "failed", "skipped") if isinstance(raw.get(k), int)}
            if isinstance(doc.get("status"), str):
                summary["status"] = doc["status"][:40]
    except (BadInputError, OSError, ValueError):
        pass
    if (bundle_dir / EVALUATION).is_file():
        try:
            evaluation = json.loads(read_evidence(bundle_dir, EVALUATION))
            tests = evaluation.get("tests") if isinstance(evaluation, dict) else None
            if isinstance(tests, dict) and isinstance(tests.get("verdict"), str):
                verdict = tests["verdict"][:40]
        except (BadInputError, OSError, ValueError):
            pass
    return summary, verdict


# -- interdiff ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FileInterdiff:
    path: str
    change: str  # unchanged | changed | new-in-revision | dropped-in-revision
    lines: list[str]  # range-diff style: outer sign (this revision vs the earlier), then the patch line

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "change": self.change, "lines": self.lines}


def _patch_lines(text: str) -> list[str]:
    _, hunks = parse_section(text)
    if not hunks:
        return [line for line in text.splitlines() if not line.startswith(("diff --git", "index "))]
    return [_SIGN[d.kind] + d.text for hunk in hunks for d in hunk.lines]


def interdiff(old_patch: str, new_patch: str, *, context: int = 3) -> list[FileInterdiff]:
    """What changed between two revisions' patches, file by file (paths sorted)."""
    old = {s.path: s.text for s in split_sections(old_patch)}
    new = {s.path: s.text for s in split_sections(new_patch)}
    out = []
    for path in sorted(old.keys() | new.keys()):
        a = _patch_lines(old[path]) if path in old else []
        b = _patch_lines(new[path]) if path in new else []
        if path not in old:
            change = "new-in-revision"
        elif path not in new:
            change = "dropped-in-revision"
        else:
            change = "unchanged" if a == b else "changed"
        lines = (
            []
            if change == "unchanged"
            else [
                line
                for line in difflib.unified_diff(a, b, lineterm="", n=context)
                if not line.startswith(("--- ", "+++ "))
            ]
        )
        out.append(FileInterdiff(path, change, lines))
    return out


def bundle_interdiff(old: BundleRecord, new: BundleRecord) -> list[FileInterdiff]:
    """:func:`interdiff` of two recorded bundles (each verified first, fails closed)."""
    return interdiff(read_verified(old).patch_text, read_verified(new).patch_text)


# -- comments carried over -----------------------------------------------------------------------------
def carried_comments(store: Store, bundle: BundleRecord) -> list[Comment]:
    """Comments written on the revisions before ``bundle``, newest revision first, each marked ``outdated``
    when the lines it names (or, for a file comment, the file) are no longer the same in ``bundle``."""
    chain = chain_before(store, bundle)
    if len(chain) < 2:
        return []
    content = read_verified(bundle)
    changed, patch = content.changed, content.patch_text
    changed_paths = {e.relativePath for e in changed}
    sandbox = {e.relativePath: e.path or "" for e in changed}
    out: list[Comment] = []
    for revision in reversed(chain[:-1]):
        for c in list_comments(store, revision.bundle.key):
            if c.side == "file" or c.line_start is None or c.line_end is None:
                outdated = c.path not in changed_paths
            else:
                lines = file_lines(patch, c.path, sandbox.get(c.path)) if c.path in changed_paths else None
                outdated = lines is None or anchor_lines(lines, c.side, c.line_start, c.line_end) != c.lines
            out.append(dataclasses.replace(c, outdated=outdated))
    return out
