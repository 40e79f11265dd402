"""Review comments: typed line, range and file comments on one bundle record (issue #15).

A comment is bound to a bundle record (``bundle_key``) and to the Mode B content digest it was
written against (docs/architecture.md "Identity"), anchored to a changed file and, for a line comment,
to a line or range on the new (``+``/context) or old (``-``) side of that file's diff. The commented
lines' text is kept with it (``lines``), so feedback reads without the bundle at hand.

Adding a comment verifies the bundle (fails closed) and checks the file and lines against its patch:
a comment can only name lines the reviewer was shown. An ``iterate`` decision ("request changes")
records the open comments (:func:`attach_to_decision` sets their ``decision_id``); they stay editable
only until then.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from codebox_tui.bundle.patchparse import DiffLine, parse_section, split_sections
from codebox_tui.contracts.common import utc_now_iso
from codebox_tui.contracts.feedback import COMMENT_KINDS, COMMENT_SIDES, FeedbackComment
from codebox_tui.errors import BadInputError, ConflictError
from store.changed_names import ChangedFileNames
from store.content import read_verified
from store.db import BundleRecord, Store, record_number

MAX_BODY = 20_000  # characters in one comment
MAX_ANCHOR_LINES = 200  # commented lines kept with a comment (a longer range keeps its first lines)


@dataclass(frozen=True)
class Comment:
    id: int
    bundle_key: int
    content_digest: str
    path: str
    side: str  # new | old | file
    line_start: int | None
    line_end: int | None
    lines: list[str]
    kind: str
    body: str
    author: str
    decision_id: int | None
    created_at: str
    updated_at: str
    outdated: bool = field(default=False)

    def covers(self, side: str, line: int) -> bool:
        """Whether this line comment includes ``line`` on ``side``."""
        return (
            self.side == side
            and self.line_start is not None
            and self.line_end is not None
            and self.line_start <= line <= self.line_end
        )

    def where(self) -> str:
        """``path``, ``path:12`` or ``path:12-15`` (``-`` side marked ``(old)``)."""
        if self.side == "file" or self.line_start is None:
            return self.path
        single = self.line_end in (None, self.line_start)
        span = str(self.line_start) if single else f"{self.line_start}-{self.line_end}"
        return f"{self.path}:{span}" + (" (old)" if self.side == "old" else "")

    def to_contract(self) -> FeedbackComment:
        return FeedbackComment(
            id=self.id,
            kind=self.kind,
            path=self.path,
            side=self.side,
            line_start=self.line_start,
            line_end=self.line_end,
            lines=self.lines,
            body=self.body,
            author=self.author,
            created_at=self.created_at,
            updated_at=self.updated_at,
            outdated=self.outdated,
        )

    def to_dict(self) -> dict[str, Any]:
        return self.to_contract().model_dump(mode="json", by_alias=True, exclude_none=True) | {
            "bundleKey": self.bundle_key,
            "contentDigest": self.content_digest,
            "decisionId": self.decision_id,
        }


# -- the diff lines a comment may name -----------------------------------------------------------
def file_lines(patch: str, path: str, sandbox_path: str | None = None) -> list[DiffLine] | None:
    """The diff lines of one file's section of ``patch`` (None: the patch has no section for it).

    Sections are found by mount-relative path, or by sandbox path (older reference bundles name files
    that way in patch headers, as ``widgets.diff_model.block_for`` also accepts)."""
    names = {path, (sandbox_path or "").lstrip("/")} - {""}
    for section in split_sections(patch):
        if section.path in names or (section.old_path or "") in names:
            _, hunks = parse_section(section.text)
            return [line for hunk in hunks for line in hunk.lines]
    return None


def anchor_lines(lines: list[DiffLine], side: str, start: int, end: int) -> list[str] | None:
    """The text of lines ``start``..``end`` on ``side`` as the diff shows them, or None when ``start``
    or ``end`` is not a line of the diff on that side."""
    numbered = ((d.new_no if side == "new" else d.old_no, d.text) for d in lines if d.kind != "nonl")
    shown = {n: text for n, text in numbered if n is not None}
    if start not in shown or end not in shown:
        return None
    return [shown[n] for n in range(start, end + 1) if n in shown][:MAX_ANCHOR_LINES]


def _check_kind(kind: str) -> str:
    value = (kind or "").strip().lower()
    if value not in COMMENT_KINDS:
        raise BadInputError(
            f"unknown comment type {kind!r}; expected one of {', '.join(COMMENT_KINDS)}",
            code="comment-invalid",
            field="type",
        )
    return value


def _check_body(body: str) -> str:
    text = (body or "").strip()
    if not text:
        raise BadInputError("a comment needs some text", code="comment-invalid", field="body")
    if len(text) > MAX_BODY:
        raise BadInputError(f"a comment holds at most {MAX_BODY} characters", code="comment-invalid", field="body")
    return text


# -- writing -------------------------------------------------------------------------------------
def add_comment(
    store: Store,
    bundle: BundleRecord,
    *,
    path: str,
    kind: str,
    body: str,
    author: str,
    line_start: int | None = None,
    line_end: int | None = None,
    side: str = "new",
) -> Comment:
    """Add a comment on changed file ``path`` (a file comment without lines; ``side`` ``new`` or ``old``
    with ``line_start``..``line_end``, which must be lines of that file's diff on that side)."""
    kind = _check_kind(kind)
    body = _check_body(body)
    if not isinstance(author, str) or not author.strip():
        raise BadInputError("the comment's author must be a non-empty string", code="comment-invalid", field="author")
    content = read_verified(bundle)
    changed, patch = content.changed, content.patch_text
    names_of = ChangedFileNames(changed)  # a relativePath two mounts change is refused, naming both
    entry = names_of.find(path, field="file")
    if entry is None:
        names = ", ".join(names_of.shown_name(e) for e in changed) or "none"
        raise BadInputError(
            f"{path!r} is not a changed file of this bundle (changed: {names})", code="comment-invalid", field="file"
        )
    rel = names_of.shown_name(entry)  # the sandbox path when another mount changes the same relativePath
    if line_start is None and line_end is None:
        side, anchor = "file", []
    elif names_of.is_ambiguous(entry):
        raise BadInputError(
            f"{rel}: another mount changes a file with the same relative path; comment on the whole file",
            code="comment-invalid",
            field="line",
        )
    else:
        if side not in COMMENT_SIDES or side == "file":
            raise BadInputError(f"side must be new or old, not {side!r}", code="comment-invalid", field="side")
        start = line_start if line_start is not None else line_end
        end = line_end if line_end is not None else start
        assert start is not None and end is not None
        if start < 1 or end < start:
            raise BadInputError(
                f"line range {start}-{end} is not a range of line numbers (expected 1 <= start <= end)",
                code="comment-invalid",
                field="line",
            )
        diff = file_lines(patch, rel, entry.path or "")
        found = anchor_lines(diff or [], side, start, end)
        if found is None:
            raise BadInputError(
                f"line {start if end == start else f'{start}-{end}'} of {rel} is not shown in the diff on the "
                f"{side} side; comment on a line the diff shows, or on the whole file",
                code="comment-invalid",
                field="line",
            )
        line_start, line_end, anchor = start, end, found
    now = utc_now_iso()
    with store.write() as conn:
        cur = conn.execute(
            """INSERT INTO comments (bundle_key, content_digest, path, side, line_start, line_end, anchor, kind,
                                     body, author, created_at, updated_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (
                bundle.key,
                bundle.content_digest,
                rel,
                side,
                line_start if side != "file" else None,
                line_end if side != "file" else None,
                json.dumps(anchor),
                kind,
                body,
                author.strip(),
                now,
                now,
            ),
        )
        comment_id = int(cur.lastrowid or 0)
    return get_comment(store, comment_id)


def get_comment(store: Store, comment_id: int | str) -> Comment:
    number = _comment_number(comment_id)
    rows = store._query("SELECT * FROM comments WHERE id = ?", (number,))
    if not rows:
        raise BadInputError(f"no comment {comment_id!r}", code="comment-not-found", field="comment")
    return _comment(rows[0])


def list_comments(store: Store, bundle_key: int, *, decision_id: int | None = None) -> list[Comment]:
    """A bundle record's comments in reading order (file, then line); only those an iterate decision
    recorded when ``decision_id`` is given."""
    sql = "SELECT * FROM comments WHERE bundle_key = ?"
    params: tuple[Any, ...] = (bundle_key,)
    if decision_id is not None:
        sql += " AND decision_id = ?"
        params += (decision_id,)
    rows = store._query(sql + " ORDER BY path, COALESCE(line_start, 0), id", params)
    return [_comment(row) for row in rows]


def open_comments(store: Store, bundle_key: int) -> list[Comment]:
    """Comments no decision has recorded yet (the ones an iterate decision would send)."""
    return [c for c in list_comments(store, bundle_key) if c.decision_id is None]


def _editable(store: Store, comment_id: int | str) -> Comment:
    comment = get_comment(store, comment_id)
    if comment.decision_id is not None:
        raise ConflictError(
            f"comment {comment.id} was sent with decision {comment.decision_id} and can no longer change",
            code="comment-recorded",
            field="comment",
        )
    return comment


def edit_comment(store: Store, comment_id: int | str, *, body: str | None = None, kind: str | None = None) -> Comment:
    """Change a comment's text and/or type (not once a decision recorded it)."""
    comment = _editable(store, comment_id)
    new_body = _check_body(body) if body is not None else comment.body
    new_kind = _check_kind(kind) if kind is not None else comment.kind
    with store.write() as conn:
        conn.execute(
            "UPDATE comments SET body = ?, kind = ?, updated_at = ? WHERE id = ? AND decision_id IS NULL",
            (new_body, new_kind, utc_now_iso(), comment.id),
        )
    return get_comment(store, comment.id)


def delete_comment(store: Store, comment_id: int | str) -> Comment:
    """Delete a comment (not once a decision recorded it); returns what was deleted."""
    comment = _editable(store, comment_id)
    with store.write() as conn:
        conn.execute("DELETE FROM comments WHERE id = ? AND decision_id IS NULL", (comment.id,))
    return comment


def attach_to_decision(store: Store, bundle_key: int, decision_id: int, content_digest: str) -> list[Comment]:
    """Record a bundle record's open comments (written against ``content_digest``) with an iterate
    decision; returns them."""
    with store.write() as conn:
        conn.execute(
            "UPDATE comments SET decision_id = ? WHERE bundle_key = ? AND content_digest = ? AND decision_id IS NULL",
            (decision_id, bundle_key, content_digest),
        )
    return list_comments(store, bundle_key, decision_id=decision_id)


def _comment_number(comment_id: int | str) -> int:
    return record_number(comment_id, prefixes=("#", "c"), what="comment", example=3)


def _comment(row: sqlite3.Row) -> Comment:
    try:
        lines = json.loads(row["anchor"])
    except ValueError:
        lines = []
    return Comment(
        id=int(row["id"]),
        bundle_key=int(row["bundle_key"]),
        content_digest=row["content_digest"],
        path=row["path"],
        side=row["side"],
        line_start=row["line_start"],
        line_end=row["line_end"],
        lines=[str(x) for x in lines] if isinstance(lines, list) else [],
        kind=row["kind"],
        body=row["body"],
        author=row["author"],
        decision_id=row["decision_id"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )
