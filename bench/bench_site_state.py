"""Benchmark: the site's own state on a default site (docs/site-state.md).

Rows (all measured in this one invocation, in one warm sandbox, offline):
  * a plain `wordpress.run-php` (`echo 1;`, WordPress loaded) — the reference for the ratios
  * a bare PHP round trip (`<?php echo 1;`, WordPress not loaded)
  * one site-state summary (`take_summary`; read through PDO, WordPress not loaded); the first one
    of the sandbox is reported apart (cold database pages)
  * the before/after pair of summaries plus the diff: what a run would pay
  * checkpoint create / restore (in the sandbox), snapshot to the host (`take_snapshot`) / restore from it
  * whole runs through the lifecycle (`RunService.run`: boot, one command, capture) with and without the
    site-state summaries (CODEBOX_SITE_STATE on/off, alternated), and the summaries' own share of a run
    (the outcome's `siteStateSeconds`): the cost every run pays (docs/site-state.md, "In every run")

  * an episode's snapshot (`Episode.snapshot`: take it and write the document and its blobs into the bundle)
    and restore (`Episode.restore`), and the restore of that bundle's snapshot into a fresh sandbox by
    `codebox run --restore` (`RunRequest.restore`: the outcome's `restoreSeconds`) (docs/episodes.md)

Targets: summary < 150 ms, before/after pair < 300 ms (also the added time per run), checkpoint create
and restore < 1 s each, snapshot and restore of a default site < 1 s each.
Usage: python bench/bench_site_state.py [-n N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
HOME = Path(tempfile.mkdtemp(prefix="codebox-bench-home-"))
os.environ["CODEBOX_HOME"] = str(HOME)
os.environ["CODEBOX_SPARE_SANDBOXES"] = "off"

from codebox_tui.settings import reload_settings  # noqa: E402

reload_settings()

from codebox_tui.contracts.episode import ActionSpec  # noqa: E402
from codebox_tui.contracts.runtime import RuntimePolicy  # noqa: E402
from codebox_tui.lifecycle.episode import Episode, load_snapshot_document  # noqa: E402
from codebox_tui.lifecycle.request import CommandStep, RunRequest  # noqa: E402
from codebox_tui.lifecycle.service import RunService  # noqa: E402
from codebox_tui.runtime import site_state  # noqa: E402
from codebox_tui.runtime.backend import SandboxSpec  # noqa: E402
from codebox_tui.runtime.playground import shutdown_sidecars  # noqa: E402
from codebox_tui.runtime.session import RunSession  # noqa: E402
from codebox_tui.runtime.site_state_diff import diff_summaries  # noqa: E402
from codebox_tui.settings import CodeboxSettings  # noqa: E402


def timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        started = time.perf_counter()
        fn()
        out.append(time.perf_counter() - started)
    return out


def runs_with_and_without(artifacts: Path, n: int) -> tuple[list[float], list[float], list[float]]:
    """Whole runs through the lifecycle, alternating the setting so drift hits both sides alike."""
    with_state: list[float] = []
    without_state: list[float] = []
    own: list[float] = []
    for _ in range(n):
        for setting, out in (("on", with_state), ("off", without_state)):
            request = RunRequest(
                commands=[CommandStep("wordpress.run-php", ["code=echo 1;"])],
                policy=RuntimePolicy(commands=["wordpress.run-php"]),
                artifacts_root=artifacts,
            )
            started = time.perf_counter()
            outcome = RunService(CodeboxSettings(site_state=setting)).run(request)
            out.append(time.perf_counter() - started)
            assert outcome.success, outcome.failure_text()
            if setting == "on":
                own.append(outcome.timings["siteStateSeconds"])
    return with_state, without_state, own


def episode_rows(artifacts: Path, n: int) -> tuple[list[float], list[float], list[float]]:
    """An episode's snapshot and restore, then ``run --restore`` of that snapshot into fresh sandboxes."""
    request = RunRequest(
        policy=RuntimePolicy(commands=["wordpress.run-php"]), artifacts_root=artifacts, tool_commands=[]
    )
    saved: list[object] = []
    with Episode(request, resettable=False) as episode:
        episode.reset([])
        episode.step(ActionSpec(command="wordpress.run-php", args=["code=echo 1;"]))
        snapshot = timed(lambda: saved.append(episode.snapshot()), n)
        restore = timed(lambda: episode.restore(saved[-1]), n)  # type: ignore[arg-type]
    assert episode.outcome is not None and episode.outcome.bundle_dir is not None, "the episode left no bundle"
    path = episode.outcome.bundle_dir / saved[-1].artifactRefs[0].path  # type: ignore[attr-defined]
    restored: list[float] = []
    for _ in range(max(1, n // 2)):
        run = RunRequest(
            commands=[CommandStep("wordpress.run-php", ["code=echo 1;"])],
            policy=RuntimePolicy(commands=["wordpress.run-php"]),
            artifacts_root=artifacts,
            restore=load_snapshot_document(path),
            restore_source=str(path),
        )
        outcome = RunService().run(run)
        assert outcome.success, outcome.failure_text()
        restored.append(outcome.timings["restoreSeconds"])
    return snapshot, restore, restored


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=5, help="repetitions per row")
    n = parser.parse_args().n
    artifacts = Path(tempfile.mkdtemp(prefix="codebox-bench-artifacts-"))
    spec = SandboxSpec(
        mounts=[],
        policy=RuntimePolicy(
            commands=["wordpress.run-php", "wp-codebox.checkpoint-create", "wp-codebox.checkpoint-restore"]
        ),
    )
    rows: list[tuple[str, list[float], str]] = []
    try:
        with RunSession(spec, artifacts) as run:
            run.boot_sandbox()
            sandbox = run.sandbox
            first = timed(lambda: site_state.take_summary(sandbox), 1)
            run.execute("wordpress.run-php", ["code=echo 1;"])  # the first WordPress load of the sandbox
            plain = timed(lambda: run.execute("wordpress.run-php", ["code=echo 1;"]), n)
            bare = timed(lambda: sandbox.run_php("<?php echo 1;", 30.0), n)
            summary = timed(lambda: site_state.take_summary(sandbox), n)
            pair = timed(lambda: diff_summaries(site_state.take_summary(sandbox), site_state.take_summary(sandbox)), n)
            scope = site_state.snapshot_scope({}, [])
            create = timed(lambda: run.execute("wp-codebox.checkpoint-create", ["name=bench"]), n)
            restore = timed(lambda: run.execute("wp-codebox.checkpoint-restore", ["name=bench"]), n)
            snapshots: list[object] = []
            snap = timed(lambda: snapshots.append(site_state.take_snapshot(sandbox, scope)), max(1, n // 2))
            snapshot = snapshots[-1]
            back = timed(lambda: site_state.restore_snapshot(sandbox, snapshot), max(1, n // 2))  # type: ignore[arg-type]
            stats = snapshot.metadata.get("stats")  # type: ignore[attr-defined]
        with_state, without_state, own = runs_with_and_without(artifacts, n)
        episode_snapshot, episode_restore, run_restore = episode_rows(artifacts, n)
        rows = [
            ("plain wordpress.run-php (echo 1; WordPress loaded)", plain, "ref"),
            ("bare PHP round trip (no WordPress)", bare, ""),
            ("first summary of a sandbox", first, ""),
            ("site-state summary", summary, "< 0.150"),
            ("before/after summaries + diff", pair, "< 0.300"),
            ("checkpoint-create (in the sandbox)", create, "< 1.0"),
            ("checkpoint-restore (in the sandbox)", restore, "< 1.0"),
            ("snapshot to the host (files inline)", snap, ""),
            ("restore that snapshot from the host", back, ""),
            ("run (boot, echo 1;, capture), site state on", with_state, ""),
            ("run (boot, echo 1;, capture), site state off", without_state, ""),
            ("  the summaries + diff inside those runs", own, "< 0.300"),
            ("episode snapshot (into the bundle, with blobs)", episode_snapshot, "< 1.0"),
            ("episode restore", episode_restore, "< 1.0"),
            ("run --restore: the restore in a fresh sandbox", run_restore, "< 1.0"),
        ]
        reference = statistics.median(plain)
        print(f"\n{'row':52} {'min':>6} {'median':>6} {'max':>6} {'x plain':>8}  target")
        for name, values, target in rows:
            med = statistics.median(values)
            print(
                f"{name:52} {min(values):6.3f} {med:6.3f} {max(values):6.3f} {med / reference:8.2f}  {target}"
                f"  n={len(values)}"
            )
        print(f"\nsnapshot of a default site: {stats}")
        print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        shutdown_sidecars()
        shutil.rmtree(artifacts, ignore_errors=True)
        shutil.rmtree(HOME, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
