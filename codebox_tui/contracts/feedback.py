"""Review feedback: the comments of a "request changes" (``iterate``) decision as one document.

``codebox/review-feedback/v1`` is what ``codebox review feedback`` and the TUI write as
``feedback.json`` next to a bundle (with ``feedback.md``, the same content for a person or an agent to
act on in one pass). Comments are typed (``issue``, ``suggestion``, ``note``, ``praise``) and anchored to
a changed file, optionally to a line or range on the new (``+``) or old (``-``) side of its diff.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from codebox_tui.contracts.common import Contract

FEEDBACK_SCHEMA: Final = "codebox/review-feedback/v1"

CommentKind = Literal["issue", "suggestion", "note", "praise"]
COMMENT_KINDS: tuple[str, ...] = ("issue", "suggestion", "note", "praise")
CommentSide = Literal["new", "old", "file"]
COMMENT_SIDES: tuple[str, ...] = ("new", "old", "file")


class FeedbackComment(Contract):
    """One review comment. ``side`` ``file`` is a comment on the whole file (no lines)."""

    id: int
    kind: CommentKind
    path: str = Field(min_length=1)
    side: CommentSide = "new"
    line_start: int | None = Field(default=None, ge=1)
    line_end: int | None = Field(default=None, ge=1)
    lines: list[str] = Field(default_factory=list, description="the commented lines as the diff shows them")
    body: str = Field(min_length=1)
    author: str
    created_at: str
    updated_at: str
    outdated: bool = False


class FeedbackDecision(Contract):
    id: int
    action: str
    approver: str
    reason: str = ""
    decided_at: str


class ReviewFeedback(Contract):
    """``codebox/review-feedback/v1``: what a reviewer asked to change in one bundle."""

    schema_: Literal["codebox/review-feedback/v1"] = Field(default=FEEDBACK_SCHEMA, alias="schema")
    bundle_id: str
    bundle_key: int
    bundle_directory: str
    content_digest: str = Field(pattern=r"^[0-9a-f]{64}$")
    decision: FeedbackDecision | None = None
    summary: dict[str, int] = Field(default_factory=dict, description="comment count per kind")
    comments: list[FeedbackComment] = Field(default_factory=list)

    def to_wire(self) -> dict[str, object]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)
