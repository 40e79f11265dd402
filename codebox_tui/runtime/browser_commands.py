"""Catalog handlers for ``wordpress.browser-probe`` and ``wordpress.browser-actions``: they resolve URLs
against the sandbox's live preview, run the Chromium drivers in :mod:`codebox_tui.browser` (which know
nothing about runs) and register the evidence files with the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codebox_tui.browser.actions import ACTION_CAPTURES, parse_steps, run_actions
from codebox_tui.browser.checkpoints import parse_checkpoints
from codebox_tui.browser.launch import resolve_url
from codebox_tui.browser.probe import (
    ALL_CAPTURES,
    CONTENT_TYPES,
    PROBE_CAPTURES,
    parse_capture,
    run_probe,
)
from codebox_tui.bundle import layout
from codebox_tui.durations import parse_duration
from codebox_tui.runtime.bench_args import PATH_SEPARATOR
from codebox_tui.runtime.context import CommandContext
from codebox_tui.runtime.outcome import CommandOutcome


def evidence_dir(session: CommandContext) -> tuple[Path, str]:
    """files/browser/ for the first browser command of a run, files/browser/<n>/ after that."""
    base = session.run_dir / layout.BROWSER_DIR
    if not base.exists():
        return base, layout.BROWSER_DIR
    n = 2
    while (base / str(n)).exists():
        n += 1
    return base / str(n), layout.browser_path(n)


def register_evidence(session: CommandContext, rel_dir: str, files: list[str]) -> list[dict[str, Any]]:
    refs = []
    for name in files:
        kind = "browser-" + name.split(".")[0]
        content_type = CONTENT_TYPES.get(name, "image/png" if name.endswith(".png") else "application/octet-stream")
        session.add_evidence(f"{rel_dir}/{name}", kind, content_type)
        refs.append({"path": f"{rel_dir}/{name}", "kind": kind})
    return refs


def browser_probe(session: CommandContext, args: dict[str, str], timeout_s: float) -> CommandOutcome:
    base = session.sandbox.preview_url
    url = resolve_url(base, args.get("url"))
    limit = min(timeout_s, parse_duration(args["timeout"], "timeout") if args.get("timeout") else timeout_s)
    named = parse_checkpoints(args["checkpoint"].split(PATH_SEPARATOR) if args.get("checkpoint") else [])
    out_dir, rel = evidence_dir(session)
    summary = run_probe(
        url,
        out_dir,
        wait_for=args.get("wait-for"),
        viewport=args.get("viewport"),
        capture=parse_capture(args.get("capture"), PROBE_CAPTURES, ALL_CAPTURES),
        timeout_s=limit,
        origin_url=base,
        named=named,
    )
    refs = register_evidence(session, rel, summary["files"])
    session.emit(
        "browser.probe", {"url": url, "status": summary["status"], "httpStatus": summary["httpStatus"], "evidence": rel}
    )
    text = (
        f"{summary['status']}: {url} → HTTP {summary['httpStatus']}, {summary['counts']['errors']} page errors, "
        f"{len(summary['consoleErrors'])} console errors; evidence in {rel}/\n"
    )
    return CommandOutcome(
        stdout=text,
        stderr=summary["error"] or "",
        exit_code=0 if summary["status"] == "passed" else 1,
        json=summary,
        artifact_refs=refs,
    )


def browser_actions(session: CommandContext, args: dict[str, str], timeout_s: float) -> CommandOutcome:
    base = session.sandbox.preview_url
    steps = parse_steps(args["steps-json"], Path.cwd())
    start = resolve_url(base, args["url"]) if args.get("url") else None
    total = min(timeout_s, parse_duration(args["timeout"], "timeout") if args.get("timeout") else timeout_s)
    per_step = parse_duration(args["step-timeout"], "step-timeout") if args.get("step-timeout") else 10.0
    allow_eval = "wordpress.browser-actions.evaluate" in session.spec.policy.commands
    out_dir, rel = evidence_dir(session)
    summary = run_actions(
        start,
        steps,
        out_dir,
        base_url=base,
        step_timeout_s=per_step,
        total_timeout_s=total,
        capture=parse_capture(args.get("capture"), ACTION_CAPTURES),
        allow_evaluate=allow_eval,
    )
    refs = register_evidence(session, rel, summary["files"])
    session.emit(
        "browser.actions",
        {"status": summary["status"], "firstFailureIndex": summary["firstFailureIndex"], "evidence": rel},
        level="info" if summary["status"] == "passed" else "warning",
    )
    text = (
        f"{summary['status']}: {summary['passed']}/{summary['steps']} steps passed"
        + (f"; {_step_name(summary['firstFailureIndex'])} failed: {summary['failure']}" if summary["failure"] else "")
        + f"; evidence in {rel}/\n"
    )
    return CommandOutcome(
        stdout=text, exit_code=0 if summary["status"] == "passed" else 1, json=summary, artifact_refs=refs
    )


def _step_name(index: int) -> str:
    """How a person counts an action step (``steps.json`` indexes from 0; -1 is the implicit load of ``url``)."""
    return "loading the start url" if index < 0 else f"step {index + 1}"
