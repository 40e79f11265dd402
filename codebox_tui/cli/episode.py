"""``codebox episode``: stateful runtime episodes — run a plan, print its schema (docs/episodes.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from codebox_tui.cli.output import BACKEND_HELP, emit_json, progress, to_jsonable
from codebox_tui.cli.run_options import RESTORE_HELP
from codebox_tui.contracts.episode import EPISODE_PLAN_SCHEMA
from codebox_tui.contracts.schemas import generate_json_schema
from codebox_tui.errors import ExitCode
from codebox_tui.lifecycle.episode import episode_run_output, load_plan, run_plan
from codebox_tui.progress_report import StderrProgress

# the first lines of each episode step's output printed under it (the whole output is in the bundle's trace)
STEP_OUTPUT_LINES = 20

episode_app = typer.Typer(
    help="Stateful runtime episodes: steps, observations, snapshots, restores (docs/episodes.md).", no_args_is_help=True
)


@episode_app.command("run")
def episode_run_command(
    plan_file: Path = typer.Argument(..., help="An episode plan (codebox/episode-plan/v1, JSON)."),
    artifacts: Path | None = typer.Option(
        None,
        "--artifacts",
        "--artifacts-dir",
        help="Folder that receives the run bundle (default: $CODEBOX_HOME/artifacts).",
    ),
    restore: Path | None = typer.Option(None, "--restore", help=RESTORE_HELP + " Overrides the plan's restore."),
    backend: str | None = typer.Option(None, "--backend", help=BACKEND_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print one codebox/episode-result/v1 document on stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress lines on stderr."),
) -> None:
    """Run an episode plan in one sandbox and capture its bundle with the episode trace.

    Exit codes: 0 every step exited 0 and the bundle verified; 1 a step failed or the bundle did not verify;
    2 the plan (every problem named by its JSON path) or the snapshot is bad or incompatible; 3 denied by policy;
    4 sandbox failure; 130 interrupted."""
    plan = load_plan(plan_file)
    reporter = StderrProgress("episode", quiet=quiet)
    episode, status = run_plan(
        plan,
        plan_file.resolve().parent,
        artifacts_root=artifacts,
        progress=reporter,
        restore=str(restore) if restore is not None else None,
        backend=backend,
    )
    output = episode_run_output(episode, status)
    outcome = episode.outcome
    assert outcome is not None
    trace = episode.last_trace
    error = outcome.error
    if json_out:
        emit_json(outcome.redact.value(to_jsonable(output)))
    else:
        executions = [s.execution for s in (trace.steps if trace else [])]
        for step, execution in zip(output.steps, executions, strict=False):
            # counted from 1 as the progress lines count them (the trace's `index` is 0-based)
            progress(
                f"  step {step.index + 1}: {step.command} exited {step.exitCode}"
                + (f", observed {step.observation}" if step.observation else "")
            )
            for stream in ("stdout", "stderr"):
                text = outcome.redact(str(execution.get(stream) or "")).rstrip("\n")
                lines = text.split("\n") if text else []
                for line in lines[:STEP_OUTPUT_LINES]:
                    progress(f"    {line}")
                if len(lines) > STEP_OUTPUT_LINES:
                    progress(f"    … {len(lines) - STEP_OUTPUT_LINES} more line(s) of {stream} in the bundle's trace")
        progress(
            f"codebox: episode {output.status}; {len(output.steps)} step(s), {len(output.snapshots)} snapshot(s); "
            f"bundle {outcome.bundle_id or '(not captured)'} in {outcome.run_dir}"
        )
        if error is not None:
            progress(outcome.redact(f"codebox: error: {error}"))
        for risk in outcome.site_state_risks:  # the verdict is not clean (docs/site-state.md, "Verdicts")
            progress(outcome.redact(f"codebox: NOT CLEAN: site-state risk {risk.code}: {risk.message}"))
    if error is not None:
        raise typer.Exit(int(error.exit_code))
    if not output.success:
        raise typer.Exit(int(ExitCode.FAILED))


@episode_app.command("schema")
def episode_schema_command() -> None:
    """Print the JSON Schema of an episode plan (codebox/episode-plan/v1), generated from its model."""
    emit_json(generate_json_schema(EPISODE_PLAN_SCHEMA))


def register(app: typer.Typer) -> None:
    app.add_typer(episode_app, name="episode")
