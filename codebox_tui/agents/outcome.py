"""The outcome documents of one agent task, from what the run left (pure: no sandbox, no files):
``wp-codebox/agent-result/v1`` and ``wp-codebox/sandbox-completion-outcome/v1`` with the status /
confidence / nextAction mapping of docs/agent-tasks.md ("Outcome mapping")."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from codebox_tui.bundle import layout
from codebox_tui.contracts.agent import (
    AgentFailure,
    AgentResult,
    ArtifactRefs,
    Blocker,
    BundleCheck,
    ChangedFilesRef,
    CompletionOutcome,
    PatchRef,
    Provenance,
    TranscriptRef,
    Verification,
    VerificationCommand,
    WorkspaceTools,
)


@dataclass
class TaskFacts:
    """What the outcome is made of: the agent's own end (status completed/failed/unknown, its summary),
    the executions (command, exit code), failures, the changed files and the patch of the bundle, and the
    workspace-tool diagnostics (tool calls refused by policy or schema)."""

    agent_status: str
    agent_summary: str | None
    commands: list[tuple[str, int | None]]
    failures: list[AgentFailure]
    changed_files: list[dict[str, Any]]
    patch_bytes: int
    patch_sha256: str | None
    bundle_dir: str
    bundle_id: str | None
    runtime: dict[str, Any] | None = None
    task: dict[str, Any] | None = None
    tool_diagnostics: list[dict[str, Any]] = field(default_factory=list)
    blockers: list[Blocker] = field(default_factory=list)
    risk_notes: list[str] = field(default_factory=list)
    bundle_valid: bool | None = None


def changed_files_ref(changed: list[dict[str, Any]]) -> ChangedFilesRef:
    statuses = Counter(str(f.get("status")) for f in changed)
    return ChangedFilesRef(
        count=len(changed),
        paths=[str(f.get("relativePath") or f.get("path")) for f in changed],
        statuses=dict(sorted(statuses.items())),
        artifact=layout.CHANGED_FILES,
    )


def agent_result(facts: TaskFacts) -> AgentResult:
    """An empty patch and no changed files is an explicit non-actionable no-op, whatever the exit code."""
    changed = changed_files_ref(facts.changed_files)
    failed = facts.agent_status == "failed"
    actionable = not failed and changed.count > 0 and facts.patch_bytes > 0
    if failed:
        summary, no_op = "Agent sandbox failed before producing actionable file changes.", "execution_failed"
    elif actionable:
        summary, no_op = (
            (f"Agent sandbox produced {changed.count} changed files and a {facts.patch_bytes}-byte patch."),
            None,
        )
    else:
        summary, no_op = "Agent sandbox completed without actionable file changes.", "no_file_changes"
    return AgentResult(
        status=facts.agent_status if facts.agent_status in ("completed", "failed") else "unknown",
        actionable=actionable,
        summary=summary,
        changedFiles=changed,
        patch=PatchRef(bytes=facts.patch_bytes, sha256=facts.patch_sha256, artifact=layout.PATCH),
        transcript=TranscriptRef(artifact=layout.TRANSCRIPT, executionCount=len(facts.commands)),
        artifacts=ArtifactRefs(directory=facts.bundle_dir, review=layout.REVIEW, manifest=layout.MANIFEST),
        failures=facts.failures,
        noOpReason=no_op,
        workspaceTools=WorkspaceTools(diagnostics=facts.tool_diagnostics) if facts.tool_diagnostics else None,
        agentSummary=facts.agent_summary,
    )


def completion_outcome(facts: TaskFacts, result: AgentResult) -> CompletionOutcome:
    """failed + workspace-tool diagnostics → blocked / fix-blocker; failed → failed / retry; completed and
    actionable → succeeded / promote / high; otherwise partial / review. Confidence is low when there are
    blockers, else medium (high only for a promotable result)."""
    blockers = list(facts.blockers)
    if result.status == "failed":
        message = "; ".join(f.message for f in result.failures) or result.summary
        if facts.tool_diagnostics:
            status, next_action = "blocked", "fix-blocker"
            blockers.append(Blocker(kind="runtime-blocker", message=message[:2000]))
        else:
            status, next_action = "failed", "retry"
            blockers.append(Blocker(kind="runtime-failure", message=message[:2000]))
    elif result.status == "completed" and result.actionable:
        status, next_action = "succeeded", "promote"
    else:
        status, next_action = "partial", "review"
    confidence = "low" if blockers else ("high" if status == "succeeded" else "medium")
    risk_notes = list(facts.risk_notes)
    if result.noOpReason == "no_file_changes":
        risk_notes.append("The agent changed no files: nothing to review or apply.")
    bundle_check = (
        BundleCheck(artifact=layout.VERIFICATION_EVIDENCE, status="valid" if facts.bundle_valid else "invalid")
        if facts.bundle_valid is not None
        else None
    )
    return CompletionOutcome(
        status=status,
        summary=result.summary,
        changedFiles=result.changedFiles,
        patch=result.patch,
        artifacts=result.artifacts,
        verification=Verification(
            transcript=layout.TRANSCRIPT,
            artifactBundle=bundle_check,
            commands=[VerificationCommand(command=c, exitCode=e) for c, e in facts.commands],
        ),
        blockers=blockers,
        riskNotes=risk_notes,
        confidence=confidence,
        nextAction=next_action,
        provenance=Provenance(
            artifactBundleId=facts.bundle_id, artifactDirectory=facts.bundle_dir, runtime=facts.runtime, task=facts.task
        ),
    )
