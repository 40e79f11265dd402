"""What each MCP tool does, as plain functions of its input model (docs/mcp.md). No MCP types here:
``server.py`` turns these into tools, their errors into tool errors and their progress into progress
notifications.

Every operation goes through the same code as its CLI command: ``run`` through the one run lifecycle
(``RunRequest`` → ``RunService.run`` → ``RunOutcome``), decisions through ``store.decisions``, apply-back
through ``store.apply`` and its adapters. Bad input raises a :class:`~codebox_tui.errors.CodeboxError`
naming the field before anything boots or is written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codebox_tui.agents import agent_task_request_from_json, run_agent_task
from codebox_tui.bundle.reader import find_bundle_dir, load_bundle
from codebox_tui.bundle.summary import ArtifactSummary, artifact_summary, digest_b
from codebox_tui.bundle.verify import verify_bundle
from codebox_tui.contracts.apply import ApplyResult, Decision
from codebox_tui.contracts.bundle import BundleVerification
from codebox_tui.contracts.runtime import RunOutput
from codebox_tui.durations import parse_duration
from codebox_tui.errors import BadInputError, ConflictError
from codebox_tui.lifecycle import (
    CommandStep,
    ProgressListener,
    RunControl,
    RunOutcome,
    RunRequest,
    RunService,
    Toolchain,
    env_from_pairs,
    mounts_from_text,
    policy_from_text,
    run_document,
)
from codebox_tui.mcp_server.models import (
    AgentTaskInput,
    ApplyInput,
    BundleInput,
    ListRunsInput,
    ListRunsResult,
    ReviewDecideInput,
    RunInput,
    RunResult,
)
from codebox_tui.runtime.catalog import get_command
from store.apply import apply_decision
from store.content import read_verified
from store.db import Store
from store.decisions import decide as store_decide
from store.decisions import decide_on, default_approver, resolve_bundle
from store.inbox import inbox_rows, select_rows


def _duration(value: str | float, field: str) -> float:
    return parse_duration(str(value), field)


def _existing_path(text: str, field: str, *, what: str) -> Path:
    path = Path(text).expanduser()
    if not path.exists():
        raise BadInputError(f"{text} does not exist; expected {what}", code="path-missing", field=field)
    return path


def run_request(params: RunInput) -> RunRequest:
    """The run request for ``params``, checked the way ``codebox run`` checks its options."""
    get_command(params.command)  # an unknown command fails first
    policy_text = json.dumps(params.policy) if isinstance(params.policy, dict) else params.policy
    request = RunRequest(
        mounts=mounts_from_text(params.mounts),
        policy=policy_from_text(policy_text),
        wp=params.wp,
        php=params.php,
        boot_timeout_s=_duration(params.boot_timeout, "boot_timeout"),
        artifacts_root=Path(params.artifacts).expanduser() if params.artifacts else None,
        flow="mcp",
        backend=params.backend,
    )
    request.commands = [CommandStep(params.command, list(params.args), _duration(params.timeout, "timeout"))]
    request.metadata = dict(params.metadata)
    request.env = env_from_pairs([f"{name}={value}" for name, value in params.env.items()])
    phar = (
        _existing_path(params.wp_cli_phar, "wp_cli_phar", what="the path of wp-cli.phar")
        if params.wp_cli_phar
        else None
    )
    request.tools = Toolchain(wp_cli_phar=phar)
    return request


def run_result(outcome: RunOutcome) -> RunResult:
    """``codebox run --json``'s document (redacted) and where the run landed for review."""
    bundle_dir = outcome.bundle_dir
    return RunResult(
        run=RunOutput.model_validate(run_document(outcome)),
        status=outcome.status,
        bundleDir=str(bundle_dir) if bundle_dir else None,
        contentDigestB=digest_b(bundle_dir) if bundle_dir else None,
        inboxKey=outcome.inbox_key,
        warnings=[outcome.redact(w) for w in outcome.warnings],
    )


def run(params: RunInput, *, progress: ProgressListener | None = None, control: RunControl | None = None) -> RunResult:
    """Boot, run the command, capture, record for review (the run lifecycle, as ``codebox run``)."""
    request = run_request(params)
    return run_result(RunService().run(request, progress=progress, control=control))


def artifacts_show(params: BundleInput) -> ArtifactSummary:
    """``codebox artifacts show --json``."""
    return artifact_summary(
        load_bundle(find_bundle_dir(_existing_path(params.bundle, "bundle", what="a bundle folder")))
    )


def artifacts_verify(params: BundleInput) -> BundleVerification:
    """``codebox artifacts verify --json``: every hash, digest and reference (fails closed)."""
    folder = find_bundle_dir(_existing_path(params.bundle, "bundle", what="a bundle folder"))
    return verify_bundle(folder).model_copy(update={"manifest": None})


def review_decide(params: ReviewDecideInput) -> Decision:
    """Record a decision through the store exactly as ``codebox review approve|approve-files|discard`` does:
    computed from the bundle's bytes (re-verified) and bound to its content digest."""
    with Store.open() as store:
        if params.content_digest is not None:
            record = resolve_bundle(store, params.bundle)
            content = read_verified(record)
            actual = content.content_digest
            if actual != params.content_digest.strip():
                raise ConflictError(
                    f"the bundle's content digest is {actual}, not the {params.content_digest} you reviewed; "
                    "review it again (artifacts_show)",
                    code="content-digest-mismatch",
                    field="content_digest",
                    details={"expected": params.content_digest, "actual": actual},
                )
            return decide_on(
                store,
                record,
                params.action,
                approver=default_approver(params.approver),
                reason=params.reason,
                files=list(params.files) or None,
                hunks={k: list(v) for k, v in params.hunks.items()} or None,
                content=content,
            )
        return store_decide(
            store,
            params.bundle,
            params.action,
            approver=default_approver(params.approver),
            reason=params.reason,
            files=list(params.files) or None,
            hunks={k: list(v) for k, v in params.hunks.items()} or None,
        )


def apply(params: ApplyInput) -> ApplyResult:
    """``codebox apply``: the decision's approved files through an adapter (re-verifying the bundle and
    its digest first); returns ``wp-codebox/apply-result/v1``."""
    options = {
        k: v
        for k, v in (("branch", params.branch), ("commit", "1" if params.commit else None), ("message", params.message))
        if v
    }
    with Store.open() as store:
        return apply_decision(store, params.decision, params.adapter, Path(params.target).expanduser(), options=options)


def list_runs(params: ListRunsInput) -> ListRunsResult:
    """The review inbox's rows (the Home screen's), filtered, searched and sorted."""
    with Store.open() as store:
        rows = select_rows(inbox_rows(store), status=params.filter, text=params.text, sort=params.sort)
    return ListRunsResult(rows=rows[: params.limit], total=len(rows))


def agent_task(
    params: AgentTaskInput, *, progress: ProgressListener | None = None, control: RunControl | None = None
) -> dict[str, Any]:
    """An agent task (docs/agent-tasks.md): the same item a JSONL file for ``codebox agent-task`` holds, run on
    the one run lifecycle; the result is the command's ``codebox/agent-task/v1`` document."""
    request = agent_task_request_from_json(params.task)
    return run_agent_task(request, progress=progress, control=control).to_json()
