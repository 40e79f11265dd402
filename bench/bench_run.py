"""Benchmark: `codebox run` of a PHP probe against a mounted plugin (bundle capture included).

Rows (all measured in this one invocation, on this machine, offline):
  * bare `@wp-playground/cli server` boot (stock zip, seeded cache) → first HTTP 200 on `/`
  * cold `codebox run`: a new `codebox` process (new Node sidecar), golden site already built; its
    disposal (stopping the sandbox, from the run's `runtime.disposed` event) as a ratio of its boot
  * warm run, new sandbox: the sidecar already running in this process, golden site (and a prepared
    copy of it, made in the background after the previous run) reused; spares forced off;
    RunSession → boot → probe → capture → close
  * warm run with the pre-booted spare (what the TUI and other long-lived processes get by default),
    each after the spare refilled by the previous run is ready; its total as a ratio of the new sandbox's
  * where the time of both warm kinds goes: boot, probe, dispose (stopping the sandbox), the rest of the
    capture, close (handing the folders to the detached reaper, runtime/reaper.py)
  * RSS added to the sidecar by each extra live sandbox

Targets: cold < 5 s, warm < 2 s, disposal ≤ 0.2 × boot (worst run), spare faster than a new sandbox,
< 300 MB per extra sandbox.  Usage: python bench/bench_run.py [-n N]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
HOME = Path(tempfile.mkdtemp(prefix="codebox-bench-home-"))
os.environ["CODEBOX_HOME"] = str(HOME)

from codebox_tui.settings import get_settings, reload_settings  # noqa: E402

reload_settings()

from codebox_tui.contracts.runtime import RuntimePolicy  # noqa: E402
from codebox_tui.runtime.backend import SandboxSpec  # noqa: E402
from codebox_tui.runtime.golden import ensure_golden_site  # noqa: E402
from codebox_tui.runtime.mounts import parse_mount  # noqa: E402
from codebox_tui.runtime.playground import (  # noqa: E402
    discard_spare_sandboxes,
    enable_spare_sandboxes,
    get_sidecar,
    shutdown_sidecars,
    wait_for_spares,
)
from codebox_tui.runtime.session import RunSession  # noqa: E402
from codebox_tui.runtime.wordpress_builds import resolve_build  # noqa: E402
from codebox_tui.versions import DEFAULT_WP_VERSION  # noqa: E402

PLUGIN = REPO / "examples" / "simple-plugin"
MOUNT = f"{PLUGIN}:/wordpress/wp-content/plugins/simple-plugin:readonly"
SPARE_READY_TIMEOUT_S = 120.0
NODE_DIR = REPO / "codebox_tui" / "runtime" / "node"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tree_rss_mb(pid: int) -> float:
    """RSS of a process and all its descendants (MB)."""
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid=,rss="], capture_output=True, text=True).stdout
    rows = [tuple(int(x) for x in line.split()) for line in out.splitlines() if line.strip()]
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for p, pp, r in rows:
        children.setdefault(pp, []).append(p)
        rss[p] = r
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        total += rss.get(p, 0)
        stack.extend(children.get(p, []))
    return total / 1024


def bare_server_boot() -> float:
    """Stock `wp-playground-cli server` with the build zip in a seeded download cache → first 200."""
    build = resolve_build(DEFAULT_WP_VERSION)
    home = Path(tempfile.mkdtemp(prefix="codebox-bench-bare-"))
    cache = home / ".wordpress-playground"
    cache.mkdir()
    url = build.playground_url
    shutil.copy(build.zip_path, cache / f"custom-{hashlib.sha1(url.encode()).hexdigest()[:8]}.zip")
    port = free_port()
    started = time.monotonic()
    proc = subprocess.Popen(
        [
            get_settings().node,
            str(NODE_DIR / "node_modules" / "@wp-playground" / "cli" / "wp-playground.js"),
            "server",
            f"--wp={url}",
            f"--port={port}",
            "--php=8.3",
        ],
        env={"PATH": os.environ["PATH"], "HOME": str(home)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        while time.monotonic() - started < 120:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as response:
                    if response.status == 200:
                        return time.monotonic() - started
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("bare server did not answer within 120 s")
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=15)
        shutil.rmtree(home, ignore_errors=True)


def run_events(run_dir: Path) -> dict[str, dict[str, float]]:
    """The data of the run's lifecycle events by type (the last of each)."""
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    return {event["type"]: event.get("data") or {} for event in events}


def cold_cli_run(artifacts: Path) -> tuple[float, float]:
    """A new `codebox run` process: its wall time and its disposal as a ratio of its boot."""
    started = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "codebox_tui",
            "run",
            "--mount",
            MOUNT,
            "--command",
            "wordpress.run-php",
            "--arg",
            f"code-file={PLUGIN / 'probe.php'}",
            "--artifacts",
            str(artifacts),
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "CODEBOX_HOME": str(HOME)},
    )
    elapsed = time.monotonic() - started
    if result.returncode != 0:
        raise RuntimeError(f"codebox run failed ({result.returncode}): {result.stderr[-2000:]}")
    events = run_events(Path(json.loads(result.stdout)["artifacts"]["directory"]))
    return elapsed, events["runtime.disposed"]["disposeMs"] / events["runtime.ready"]["bootMs"]


def spec() -> SandboxSpec:
    return SandboxSpec(mounts=[parse_mount(MOUNT)], policy=RuntimePolicy(commands=["wordpress.run-php"]))


PHASES = ("boot", "probe", "dispose", "capture", "close")


def warm_run(artifacts: Path) -> tuple[float, dict[str, float]]:
    started = time.monotonic()
    with RunSession(spec(), artifacts) as run:
        run.boot_sandbox()
        booted = time.monotonic()
        result = run.execute("wordpress.run-php", [f"code-file={PLUGIN / 'probe.php'}"])
        ran = time.monotonic()
        assert result.exitCode == 0, result.stderr
        run.capture()
        captured = time.monotonic()
    total = time.monotonic() - started
    dispose = run_events(run.run_dir)["runtime.disposed"]["disposeMs"] / 1000
    return total, {
        "boot": booted - started,
        "probe": ran - booted,
        "dispose": dispose,
        "capture": captured - ran - dispose,
        "close": time.monotonic() - captured,
    }


def fmt(values: list[float]) -> str:
    return f"{min(values):6.2f} {statistics.median(values):6.2f} {max(values):6.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=3, help="repetitions per row")
    parser.add_argument("--extra-sandboxes", type=int, default=3)
    parser.add_argument(
        "--mount-mode",
        choices=["readonly", "readwrite"],
        default="readonly",
        help="how the plugin is mounted; readwrite mounts a temporary copy of it (copy-on-write "
        'by default, README "Mounts")',
    )
    options = parser.parse_args()
    if options.mount_mode == "readwrite":
        global MOUNT
        plugin = Path(tempfile.mkdtemp(prefix="codebox-bench-plugin-")) / "simple-plugin"
        shutil.copytree(PLUGIN, plugin)
        MOUNT = f"{plugin}:/wordpress/wp-content/plugins/simple-plugin:readwrite"
    artifacts = Path(tempfile.mkdtemp(prefix="codebox-bench-artifacts-"))
    try:
        rows: list[tuple[str, list[float], str]] = []
        # The very first run in a fresh CODEBOX_HOME builds the golden site (unzip + assets) and, in
        # the background, the opcache seed and a prepared site copy: once per machine and version.
        rows.append(("first run in a fresh home (builds golden+seed)", [cold_cli_run(artifacts)[0]], "once"))
        ensure_golden_site(resolve_build(DEFAULT_WP_VERSION), get_settings().golden_dir)
        bare = [bare_server_boot() for _ in range(options.n)]
        rows.append(("bare `wp-playground-cli server` → first 200", bare, "reference"))
        cold_runs = [cold_cli_run(artifacts) for _ in range(options.n)]
        cold = [elapsed for elapsed, _ in cold_runs]
        rows.append(("cold `codebox run` (new process + sidecar)", cold, "< 5 s"))
        rows.append(("  cold: disposal / boot (ratio)", [ratio for _, ratio in cold_runs], "≤ 0.2"))
        enable_spare_sandboxes(False)  # a NEW sandbox per run (the "auto" setting would keep a spare)
        warm_run(artifacts)  # start the sidecar; not timed
        warm: list[float] = []
        phases: list[dict[str, float]] = []
        for _ in range(max(options.n, 5)):
            total, split = warm_run(artifacts)
            warm.append(total)
            phases.append(split)
        rows.append(("warm run, NEW sandbox (sidecar running)", warm, "< 2 s"))
        for phase in PHASES:
            rows.append((f"  new: {phase}", [p[phase] for p in phases], ""))
        rows.append(("  new: disposal / boot (ratio)", [p["dispose"] / p["boot"] for p in phases], "≤ 0.2"))
        enable_spare_sandboxes(True)  # long-lived process: keep a pre-booted spare
        warm_run(artifacts)  # boots fresh; its spare boots once it stops; not timed
        spare: list[float] = []
        spare_phases: list[dict[str, float]] = []
        for _ in range(max(options.n, 5)):
            # the spare the previous run started when it stopped is ready, as between interactive runs
            if not wait_for_spares(SPARE_READY_TIMEOUT_S):
                raise RuntimeError(f"the spare sandbox was not ready within {SPARE_READY_TIMEOUT_S:g} s")
            total, split = warm_run(artifacts)
            spare.append(total)
            spare_phases.append(split)
        enable_spare_sandboxes(False)
        discard_spare_sandboxes()
        rows.append(("warm run + pre-booted spare", spare, "< 2 s"))
        for phase in PHASES:
            rows.append((f"  spare: {phase}", [p[phase] for p in spare_phases], ""))
        ratios = [s / statistics.median(warm) for s in spare]
        rows.append(("  spare / new sandbox (ratio of totals)", ratios, "< 1"))

        sidecar = get_sidecar(get_settings(), spec().policy)
        base = tree_rss_mb(sidecar.pid)
        held: list[RunSession] = []
        deltas: list[float] = []
        previous = base
        try:
            for _ in range(options.extra_sandboxes):
                run = RunSession(spec(), artifacts)
                held.append(run)
                run.execute("wordpress.run-php", ["code=echo 1;"])
                time.sleep(1.5)
                now = tree_rss_mb(sidecar.pid)
                deltas.append(now - previous)
                previous = now
        finally:
            for run in held:
                run.close()

        print(f"\n{'row':48} {'min':>6} {'median':>6} {'max':>6}  target   (seconds; n per row shown)")
        for name, values, target in rows:
            print(f"{name:48} {fmt(values)}  {target:8} n={len(values)}")
        print(f"\nsidecar RSS with no sandbox: {base:.0f} MB")
        print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(
            "RSS added per extra live sandbox (MB): "
            + ", ".join(f"{d:.0f}" for d in deltas)
            + f"   mean {sum(deltas) / len(deltas):.0f}   target < 300 MB"
        )
        disposal = max([ratio for _, ratio in cold_runs] + [p["dispose"] / p["boot"] for p in phases])
        checks = {
            "cold < 5 s": statistics.median(cold) < 5,
            "warm new sandbox < 2 s": statistics.median(warm) < 2,
            "warm with spare < 2 s": statistics.median(spare) < 2,
            "spare faster than new": statistics.median(spare) < statistics.median(warm),
            "worst disposal ≤ 0.2 × boot": disposal <= 0.2,
            "RSS < 300 MB": max(deltas) < 300,
        }
        print("; ".join(f"{name}: {'met' if ok else 'NOT met'}" for name, ok in checks.items()))
        return 0
    finally:
        shutdown_sidecars()
        shutil.rmtree(artifacts, ignore_errors=True)
        shutil.rmtree(HOME, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
