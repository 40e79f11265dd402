"""Benchmark: the warm new-sandbox boot of this checkout against another one, interleaved in the same minutes.

``bench_run.py`` measures one tree after the other, minutes apart: on a shared machine the load moves between
the two runs by more than the 10 % a change may cost (issue #25's rule). Here one worker process per tree keeps
its own Playground sidecar running (a private CODEBOX_HOME each, spares off, two untimed runs first), and the
driver asks them for one warm run in a new sandbox each in turn, alternating which goes first, with a pause
between runs so that neither boots while the other's background work (the next site copy, the reaper) runs.

Per run: boot (``RunSession.boot_sandbox``), the sidecar's own ``boot`` request, the CPU seconds its process
tree spent on that request (less sensitive to the machine's load than wall time), and the hand-over of the
sandbox's folders to its own uid when Codebox runs as root (runtime/sandbox_owner.py; absent in older trees).
Printed: the median of each per tree, and the per-round ratio of this tree's boot to the other's.

Without ``--other`` the other tree is issue #25's base commit (BASE_COMMIT), exported from this repository's
history into a scratch folder (its Node modules linked to this checkout's).

Usage: python bench/bench_boot_ab.py [--other /path/to/other/checkout] [-n ROUNDS] [--pause S]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BASE_COMMIT = "e1e08b7"  # issue #25's base: "no measurable slowdown beyond 10 %" is measured against it
NODE_MODULES = Path("codebox_tui") / "runtime" / "node" / "node_modules"


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of every thread of a process and its descendants (from /proc)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total, stack = 0.0, [pid]
    while stack:
        current = stack.pop()
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                fields = Path(f"/proc/{current}/task/{task}/stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / ticks
                stack += [int(child) for child in Path(f"/proc/{current}/task/{task}/children").read_text().split()]
        except OSError:  # ended meanwhile
            continue
    return total


def worker(repo: Path, home: Path) -> None:
    """One tree's side: warm runs on request (a line on stdin), each answered with a JSON line."""
    sys.path.insert(0, str(repo))
    os.environ["CODEBOX_HOME"] = str(home)
    from codebox_tui.contracts.runtime import RuntimePolicy
    from codebox_tui.runtime import playground, sidecar
    from codebox_tui.runtime.backend import SandboxSpec
    from codebox_tui.runtime.mounts import parse_mount
    from codebox_tui.runtime.session import RunSession
    from codebox_tui.settings import reload_settings

    reload_settings()
    plugin = repo / "examples" / "simple-plugin"
    mount = parse_mount(f"{plugin}:/wordpress/wp-content/plugins/simple-plugin:readonly")
    measured: dict[str, float] = {}

    hand_over = getattr(playground, "hand_over_folders", None)
    if hand_over is not None:

        def timed_hand_over(*args: Any, **kwargs: Any) -> Any:
            started = time.monotonic()
            try:
                return hand_over(*args, **kwargs)
            finally:
                measured["hand_over"] = measured.get("hand_over", 0.0) + time.monotonic() - started

        playground.hand_over_folders = timed_hand_over  # type: ignore[attr-defined]

    request = sidecar.Sidecar.request

    def timed_request(self: Any, op: str, *args: Any, **kwargs: Any) -> Any:
        if op != "boot":
            return request(self, op, *args, **kwargs)
        started, cpu = time.monotonic(), tree_cpu_seconds(self.pid)
        try:
            return request(self, op, *args, **kwargs)
        finally:
            measured["sidecar_boot"] = time.monotonic() - started
            measured["sidecar_boot_cpu"] = tree_cpu_seconds(self.pid) - cpu

    sidecar.Sidecar.request = timed_request  # type: ignore[method-assign]
    playground.enable_spare_sandboxes(False)
    artifacts = home / "artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)

    def warm_run() -> dict[str, float]:
        measured.clear()
        spec = SandboxSpec(mounts=[mount], policy=RuntimePolicy(commands=["wordpress.run-php"]))
        started = time.monotonic()
        with RunSession(spec, artifacts) as run:
            run.boot_sandbox()
            booted = time.monotonic()
            result = run.execute("wordpress.run-php", [f"code-file={plugin / 'probe.php'}"])
            assert result.exitCode == 0, result.stderr
            run.capture()
        return {"boot": booted - started, "total": time.monotonic() - started, **measured}

    try:
        warm_run()  # the sidecar, the golden site and the opcache seed
        warm_run()
        print("READY", flush=True)
        for _line in sys.stdin:
            print(json.dumps(warm_run()), flush=True)
    finally:
        playground.shutdown_sidecars()


def export_commit(commit: str, dest: Path) -> Path:
    """The tree of ``commit`` in ``dest`` (``git archive``), sharing this checkout's installed Node modules."""
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    (dest / NODE_MODULES).symlink_to((REPO / NODE_MODULES).resolve())
    return dest


def start_worker(repo: Path, home: Path, log: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, __file__, "--worker", str(repo), str(home)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log.open("w"),
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("READY"):
            return proc
    raise RuntimeError(f"the worker for {repo} ended before it was ready (see {log})")


def one_run(proc: subprocess.Popen[str]) -> dict[str, float]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("run\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError("a worker ended during a run")
    result: dict[str, float] = json.loads(line)
    return result


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        worker(Path(sys.argv[2]), Path(sys.argv[3]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--other", type=Path, help=f"the checkout to compare with (default: {BASE_COMMIT}, exported)")
    parser.add_argument("-n", type=int, default=8, help="rounds (one run of each tree per round)")
    parser.add_argument("--pause", type=float, default=4.0, help="seconds between two runs")
    options = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="codebox-bench-ab-"))
    workers: dict[str, subprocess.Popen[str]] = {}
    try:
        try:
            other = options.other.resolve() if options.other else export_commit(BASE_COMMIT, scratch / BASE_COMMIT)
        except subprocess.CalledProcessError:
            print(f"cannot export {BASE_COMMIT} from {REPO} (a shallow clone?); name a checkout with --other")
            return 2
        trees = {"other": other, "this": REPO}
        for name, repo in trees.items():
            workers[name] = start_worker(repo, scratch / f"home-{name}", scratch / f"{name}.log")
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        for round_number in range(options.n):
            order = list(trees) if round_number % 2 == 0 else list(reversed(trees))
            for name in order:
                time.sleep(options.pause)
                runs[name].append(one_run(workers[name]))
            print(
                f"round {round_number + 1}: boot this {runs['this'][-1]['boot']:.2f} s, other "
                f"{runs['other'][-1]['boot']:.2f} s (load {os.getloadavg()[0]:.1f})",
                flush=True,
            )
        print(f"\nmedians (s)                {'this':>8} {'other':>8}   this: {REPO}   other: {trees['other']}")
        for key in ("boot", "sidecar_boot", "sidecar_boot_cpu", "hand_over", "total"):
            values = {name: [run[key] for run in runs[name] if key in run] for name in trees}
            shown = [f"{statistics.median(v):8.3f}" if v else f"{'-':>8}" for v in values.values()]
            print(f"  {key:24} {shown[1]} {shown[0]}")
        ratios = [this["boot"] / other["boot"] for this, other in zip(runs["this"], runs["other"], strict=True)]
        print(
            f"boot this/other per round: median {statistics.median(ratios):.3f} "
            f"({', '.join(f'{r:.2f}' for r in ratios)}); issue #25's rule: at most 1.10"
        )
        print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        return 0
    finally:
        for proc in workers.values():
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=120)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
