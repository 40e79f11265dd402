"""Review decisions and apply-back results (docs/contracts.md, "Review decision" and "Apply result").

``ApplyResult`` is ``wp-codebox/apply-result/v1``: the one document every apply adapter returns.
:func:`normalize_apply_result` applies the reference's exact normalisation (keep the six required
keys plus ``commit``/``commit_url``/``pr_url``/``branch`` when they are non-empty strings, drop
everything else) so a third-party adapter's raw dict is checked the same way.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import Field

from codebox_tui.contracts.common import Contract

APPLY_RESULT_SCHEMA: Final = "wp-codebox/apply-result/v1"
DECISION_SCHEMA: Final = "wp-codebox/artifact-review-decision/v1"
APPLY_AUDIT_SCHEMA = "wp-codebox/apply-audit/v1"
DECISION_SOURCE = "codebox"

DecisionAction = Literal["approve", "approve-files", "discard", "iterate"]
DECISION_ACTIONS: tuple[str, ...] = ("approve", "approve-files", "discard", "iterate")
APPROVING_ACTIONS: tuple[str, ...] = ("approve", "approve-files")

OPTIONAL_RESULT_KEYS = ("commit", "commit_url", "pr_url", "branch")


class ApplyResultInvalid(ValueError):
    """An adapter returned something that is not a valid apply-result/v1 (message = the reason)."""


class ApplyResult(Contract):
    """``wp-codebox/apply-result/v1``."""

    schema_: Literal["wp-codebox/apply-result/v1"] = Field(default=APPLY_RESULT_SCHEMA, alias="schema")
    adapter: str = Field(min_length=1)
    status: str = Field(min_length=1)
    target: dict[str, Any]
    applied_files: list[str]
    audit_reference: str = Field(min_length=1)
    commit: str | None = None
    commit_url: str | None = None
    pr_url: str | None = None
    branch: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def normalize_apply_result(raw: object) -> ApplyResult:
    """Check and normalise an adapter's raw result exactly like the reference (docs/contracts.md, "Apply result")."""
    if isinstance(raw, ApplyResult):
        raw = raw.to_wire()
    if not isinstance(raw, dict):
        raise ApplyResultInvalid("result must be an object.")
    if raw.get("schema") != APPLY_RESULT_SCHEMA:
        raise ApplyResultInvalid(f"result schema must be {APPLY_RESULT_SCHEMA}.")
    adapter = raw.get("adapter")
    adapter = adapter.strip() if isinstance(adapter, str) else ""
    if not adapter:
        raise ApplyResultInvalid("result.adapter is required.")
    status = raw.get("status")
    status = status.strip() if isinstance(status, str) else ""
    if not status:
        raise ApplyResultInvalid("result.status is required.")
    target = raw.get("target")
    if not isinstance(target, dict):
        raise ApplyResultInvalid("result.target must be an object.")
    files = raw.get("applied_files")
    if not isinstance(files, list):
        raise ApplyResultInvalid("result.applied_files must be an array.")
    applied = [text for text in (str(item).strip() for item in files) if text]
    audit = raw.get("audit_reference")
    audit = audit.strip() if isinstance(audit, str) else ""
    if not audit:
        raise ApplyResultInvalid("result.audit_reference is required.")
    optional = {
        key: raw[key].strip() for key in OPTIONAL_RESULT_KEYS if isinstance(raw.get(key), str) and raw[key].strip()
    }
    return ApplyResult(
        adapter=adapter,
        status=status,
        target=dict(target),
        applied_files=applied,
        audit_reference=audit,
        **optional,
    )


HunkHash = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class Decision(Contract):
    """A reviewer's decision on one bundle, as stored and as printed with ``--json``.

    Field names follow ``wp-codebox/artifact-review-decision/v1``. ``approved_files`` are sandbox paths
    (``changed-files.json`` ``path``), what the reference's apply preflight compares with the changed
    files, so it accepts a Codebox decision as is. Codebox additions: ``id``, ``sequence`` (the
    decision's position among the bundle record's decisions, gap-free), ``approved_relative_paths``
    (the same files mount-relative; absent in decisions recorded before it existed, whose
    ``approved_files`` were mount-relative — apply-back accepts both), ``bundle_key`` and
    ``bundle_directory`` (the store record and directory decided on: several directories can share
    a Mode A ``artifact_id``), and ``approved_hunks`` (docs/contracts.md, "Hunk selection"): for a
    file approved only in part, its ``relativePath`` → the sha256 of each approved hunk (the hunk's
    ``@@`` line through its last body line, exact bytes of ``files/patch.diff``); a file not listed
    is approved whole. Absent when no file is approved in part.
    """

    schema_: Literal["wp-codebox/artifact-review-decision/v1"] = Field(default=DECISION_SCHEMA, alias="schema")
    id: int
    sequence: int
    action: DecisionAction
    artifact_id: str
    approved_files: list[str] = Field(default_factory=list)
    approved_relative_paths: list[str] | None = None
    approved_hunks: dict[str, list[HunkHash]] | None = None
    approver: str
    reason: str = ""
    decided_at: str
    content_digest: str = Field(pattern=r"^[0-9a-f]{64}$")
    source: str = DECISION_SOURCE
    bundle_key: int | None = None
    bundle_directory: str | None = None
    applies: list[AppliedRecord] = Field(default_factory=list)


class AppliedRecord(Contract):
    """One successful apply of a decision (kept with the decision; the audit log has every attempt)."""

    adapter: str
    target: str
    applied_at: str
    result: ApplyResult


Decision.model_rebuild()
