"""Compare any two bundles: files, patches, test results and verdicts side by side (issue #15), e.g. the
fan-out candidates of one task. Both bundles are verified first (fails closed) and their patches split
with the one patch parser (codebox_tui/bundle/patchparse.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codebox_tui.bundle.patchparse import split_sections
from codebox_tui.contracts.apply import Decision
from store.content import read_verified
from store.db import BundleRecord, Store
from store.revisions import FileInterdiff, bundle_tests, interdiff

COMPARISON_SCHEMA = "codebox/bundle-comparison/v1"


@dataclass(frozen=True)
class Side:
    bundle: BundleRecord
    decision: Decision | None
    tests: dict[str, Any]
    verdict: str | None
    sections: dict[str, str]  # path -> that file's patch section
    counts: dict[str, tuple[int, int]]  # path -> (additions, deletions)
    status: dict[str, str]  # path -> added | modified | deleted (changed-files)

    def to_dict(self) -> dict[str, Any]:
        return {
            "bundleKey": self.bundle.key,
            "bundleId": self.bundle.bundle_id,
            "path": self.bundle.path,
            "contentDigest": self.bundle.content_digest,
            "status": self.bundle.status,
            "decision": None if self.decision is None else self.decision.action,
            "tests": self.tests,
            "verdict": self.verdict,
            "files": len(self.status),
        }


@dataclass(frozen=True)
class FileComparison:
    path: str
    a: str | None  # the file's status in A (None: not changed there)
    b: str | None
    a_counts: tuple[int, int] | None
    b_counts: tuple[int, int] | None
    same: bool  # both change it with the identical patch section
    interdiff: FileInterdiff | None = field(default=None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "a": self.a,
            "b": self.b,
            "aLines": None if self.a_counts is None else {"added": self.a_counts[0], "deleted": self.a_counts[1]},
            "bLines": None if self.b_counts is None else {"added": self.b_counts[0], "deleted": self.b_counts[1]},
            "samePatch": self.same,
            "interdiff": [] if self.interdiff is None else self.interdiff.lines,
        }


@dataclass(frozen=True)
class Comparison:
    a: Side
    b: Side
    files: list[FileComparison]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": COMPARISON_SCHEMA,
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "files": [f.to_dict() for f in self.files],
            "summary": {
                "onlyA": sum(1 for f in self.files if f.b is None),
                "onlyB": sum(1 for f in self.files if f.a is None),
                "same": sum(1 for f in self.files if f.same),
                "different": sum(1 for f in self.files if f.a and f.b and not f.same),
            },
        }


def _side(store: Store, bundle: BundleRecord) -> Side:
    content = read_verified(bundle)
    changed, patch = content.changed, content.patch_text
    sections = {s.path: s for s in split_sections(patch)}
    by_sandbox = {e.path.lstrip("/"): e.relativePath for e in changed}
    texts: dict[str, str] = {}
    counts: dict[str, tuple[int, int]] = {}
    for path, section in sections.items():
        rel = by_sandbox.get(path, path)  # older reference bundles name files by sandbox path
        texts[rel] = section.text
        counts[rel] = (section.additions, section.deletions)
    tests, verdict = bundle_tests(Path(bundle.path))
    return Side(
        bundle,
        store.latest_decision(bundle.key),
        tests,
        verdict,
        texts,
        counts,
        {e.relativePath: e.status for e in changed},
    )


def compare(store: Store, a: BundleRecord, b: BundleRecord) -> Comparison:
    """A and B side by side: every file either changes, with its status, line counts and, when both
    change it differently, the interdiff of the two patch sections (A → B)."""
    left, right = _side(store, a), _side(store, b)
    files = []
    for path in sorted(left.status.keys() | right.status.keys()):
        ta, tb = left.sections.get(path), right.sections.get(path)
        same = path in left.status and path in right.status and ta == tb
        diff = None
        if path in left.status and path in right.status and not same:
            diff = next(iter(interdiff(ta or "", tb or "")), None) if ta and tb else None
        files.append(
            FileComparison(
                path,
                left.status.get(path),
                right.status.get(path),
                left.counts.get(path),
                right.counts.get(path),
                same,
                diff,
            )
        )
    return Comparison(left, right, files)
