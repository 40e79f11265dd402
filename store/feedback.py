"""Structured review feedback: a bundle's comments as ``feedback.md`` and ``feedback.json``.

Written when an ``iterate`` decision ("request changes") is recorded, and on demand by
``codebox review feedback``. The files go **next to** the bundle, never inside it: a sealed bundle's
manifest lists every file, and anything added to its folder fails verification as an orphaned file
(docs/security.md: the bundle is the only thing that crosses from the sandbox, and it must verify).
The folder is ``<bundle folder>.review/`` beside the bundle folder; when that cannot be written (an
imported bundle in a read-only place), ``CODEBOX_HOME/feedback/bundle-<key>/``.

The Markdown is for a person or an agent to act on in one pass: every comment with its file, lines,
the commented code and what to do, issues first. Text from the bundle (paths, code lines) is shown
with control characters as visible escapes (codebox_tui/textsafe.py), so the file is safe to ``cat``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from codebox_tui.contracts.apply import Decision
from codebox_tui.contracts.feedback import COMMENT_KINDS, FeedbackDecision, ReviewFeedback
from codebox_tui.errors import BadInputError
from codebox_tui.settings import get_settings
from codebox_tui.textsafe import safe_text
from store.comments import Comment, attach_to_decision, list_comments
from store.db import BundleRecord, Store

FEEDBACK_MD = "feedback.md"
FEEDBACK_JSON = "feedback.json"
FEEDBACK_SUFFIX = ".review"
_ORDER = {kind: i for i, kind in enumerate(COMMENT_KINDS)}  # issues first, praise last
_HEADINGS = {"issue": "Issue (must change)", "suggestion": "Suggestion", "note": "Note", "praise": "Praise"}


@dataclass(frozen=True)
class FeedbackFiles:
    directory: Path
    markdown: Path
    json: Path
    feedback: ReviewFeedback
    text: str  # the Markdown (what "copy" puts on the clipboard)


def build_feedback(bundle: BundleRecord, comments: list[Comment], decision: Decision | None = None) -> ReviewFeedback:
    ordered = sorted(comments, key=lambda c: (_ORDER.get(c.kind, 9), c.path, c.line_start or 0, c.id))
    summary = {kind: sum(1 for c in comments if c.kind == kind) for kind in COMMENT_KINDS}
    return ReviewFeedback(
        bundle_id=bundle.bundle_id,
        bundle_key=bundle.key,
        bundle_directory=bundle.path,
        content_digest=bundle.content_digest,
        decision=None
        if decision is None
        else FeedbackDecision(
            id=decision.id,
            action=decision.action,
            approver=decision.approver,
            reason=decision.reason,
            decided_at=decision.decided_at,
        ),
        summary=summary,
        comments=[c.to_contract() for c in ordered],
    )


def _code_span(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def render_markdown(feedback: ReviewFeedback) -> str:
    """The feedback as Markdown: what to change, file by file and line by line."""
    counts = ", ".join(f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in feedback.summary.items() if n)
    out = ["# Review feedback", ""]
    out.append(f"Bundle `{feedback.bundle_id}` (content `{feedback.content_digest[:16]}`), {counts or 'no comments'}.")
    if feedback.decision is not None:
        d = feedback.decision
        out += ["", f"**Changes requested** by {safe_text(d.approver)} at {d.decided_at} (decision {d.id}):", ""]
        out += [f"> {line}" if line else ">" for line in safe_text(d.reason, keep_newlines=True).splitlines()]
    if feedback.comments:
        out += [
            "",
            "Address every *issue*; *suggestions* are recommended; *notes* and *praise* need no change.",
            "Line numbers refer to the changed file after the change (`old` marks the removed side).",
        ]
    for number, c in enumerate(feedback.comments, 1):
        path = safe_text(c.path)
        if c.side == "file" or c.line_start is None:
            where = f"{_code_span(path)} (whole file)"
        else:
            span = str(c.line_start) if c.line_end in (None, c.line_start) else f"{c.line_start}-{c.line_end}"
            where = f"{_code_span(path)} line{'s' if '-' in span else ''} {span}"
            where += " (old)" if c.side == "old" else ""
        flag = " — outdated (the line changed since)" if c.outdated else ""
        out += ["", f"## {number}. {_HEADINGS.get(c.kind, c.kind)}: {where}{flag}", ""]
        if c.lines:
            code = [safe_text(line, tab_size=4) for line in c.lines]
            fence = "`" * max(3, 1 + max((len(r) for line in code for r in re.findall(r"`+", line)), default=0))
            out += [fence, *code, fence, ""]
        out += [safe_text(c.body, keep_newlines=True)]
    return "\n".join(out) + "\n"


def feedback_dir(bundle: BundleRecord) -> Path:
    """Where a bundle's feedback goes: ``<bundle folder>.review/`` beside it, else under CODEBOX_HOME."""
    folder = Path(bundle.path)
    beside = folder.with_name(folder.name + FEEDBACK_SUFFIX)
    if os.access(folder.parent, os.W_OK) or beside.is_dir():
        return beside
    return get_settings().home / "feedback" / f"bundle-{bundle.key}"


def _write_atomic(directory: Path, name: str, text: str) -> Path:
    target = directory / name
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, target)  # replaces a planted symlink itself, never writes through it
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target


def write_feedback(bundle: BundleRecord, feedback: ReviewFeedback, directory: Path | None = None) -> FeedbackFiles:
    """Write ``feedback.md`` and ``feedback.json`` (replacing earlier ones) and return their paths."""
    target = directory if directory is not None else feedback_dir(bundle)
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise BadInputError(
            f"{target} exists and is not a folder; feedback was not written",
            code="feedback-unwritable",
            field="feedback",
        )
    try:
        target.mkdir(parents=True, exist_ok=True)
        text = render_markdown(feedback)
        md = _write_atomic(target, FEEDBACK_MD, text)
        js = _write_atomic(target, FEEDBACK_JSON, json.dumps(feedback.to_wire(), indent=2, ensure_ascii=False) + "\n")
    except OSError as error:
        raise BadInputError(
            f"cannot write feedback to {target}: {error}", code="feedback-unwritable", field="feedback"
        ) from error
    return FeedbackFiles(target, md, js, feedback, text)


def export_feedback(store: Store, bundle: BundleRecord, decision: Decision | None = None) -> FeedbackFiles:
    """Write the feedback of ``decision`` (the comments it recorded), or without one the latest iterate
    decision's, or else the bundle's open comments."""
    if decision is None:
        latest = [d for d in store.list_decisions(bundle.key) if d.action == "iterate"]
        decision = latest[-1] if latest else None
    comments = list_comments(store, bundle.key, decision_id=decision.id if decision is not None else None)
    if decision is None:
        comments = [c for c in comments if c.decision_id is None]
    return write_feedback(bundle, build_feedback(bundle, comments, decision))


def record_iterate_feedback(store: Store, decision: Decision) -> FeedbackFiles | None:
    """After an ``iterate`` decision: record the open comments with it and write the feedback files.
    Does nothing for other actions."""
    if decision.action != "iterate" or decision.bundle_key is None:
        return None
    bundle = store.get_bundle_by_key(decision.bundle_key)
    attach_to_decision(store, bundle.key, decision.id, decision.content_digest)
    try:
        return export_feedback(store, bundle, decision)
    except BadInputError as error:
        raise BadInputError(
            f"decision {decision.id} is recorded with its comments, but {error.message}; write the feedback "
            f"again with: codebox review feedback {bundle.ref}",
            code=error.code,
            field=error.field,
        ) from error
