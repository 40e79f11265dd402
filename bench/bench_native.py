"""Benchmark: the native backend against Playground, both measured in this one invocation on this machine.

Rows (medians of N; a private CODEBOX_HOME, golden site and native prepared install made first, untimed):
  * new sandbox ready: ``Backend.boot`` of a sandbox with the example plugin mounted (copy-on-write), to
    the moment commands can run; Playground with its sidecar already running and spares off
  * one PHP request that loads WordPress (``require wp-load.php``) in a booted sandbox
  * one-shot ``codebox run`` of the example plugin's probe: a new ``codebox`` process each time, boot,
    probe, capture, verify, record
  * disk per native sandbox (its folder: wp-content with the database, config, temp); a native sandbox
    keeps no process between commands

Issue #28's targets: ready <= 0.3 s, one request <= 60 ms, one-shot run <= 0.2x Playground's.
The load average is printed (other processes on the machine change the result).

Usage: python bench/bench_native.py [-n N]
"""

from __future__ import annotations

import argparse
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
PLUGIN = REPO / "examples" / "simple-plugin"
PROBE = PLUGIN / "probe.php"
LOAD_WORDPRESS = "<?php require '/wordpress/wp-load.php'; echo get_bloginfo('version');"


def median_seconds(samples: list[float]) -> float:
    return statistics.median(samples)


def boot_and_request(backend: Any, spec_for: Any, n: int) -> tuple[list[float], list[float], list[int]]:
    """Boot ``n`` sandboxes one after another: seconds to ready, seconds of one WordPress-loading request,
    and (native only) the bytes of each sandbox's folder."""
    ready, request, disk = [], [], []
    for _ in range(n):
        spec = spec_for()
        started = time.monotonic()
        sandbox = backend.boot(spec)
        ready.append(time.monotonic() - started)
        try:
            started = time.monotonic()
            result = sandbox.run_php(LOAD_WORDPRESS, 120)
            request.append(time.monotonic() - started)
            if result.exit_code != 0:
                raise SystemExit(f"{backend.name}: the request failed: {result.errors[:500]}")
            work_dir = getattr(sandbox, "work_dir", None)
            if backend.name == "native" and work_dir is not None:
                disk.append(sum(p.stat().st_size for p in Path(work_dir).rglob("*") if p.is_file()))
        finally:
            sandbox.dispose()
    return ready, request, disk


def one_shot_runs(backend: str, n: int, home: Path, scratch: Path) -> list[float]:
    samples = []
    for i in range(n):
        plugin = scratch / f"{backend}-plugin-{i}"
        shutil.copytree(PLUGIN, plugin)
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "codebox_tui", "run", "--backend", backend, "--quiet", "--mount",
             f"{plugin}:/wordpress/wp-content/plugins/simple-plugin", "--command", "wordpress.run-php",
             "--arg", f"code-file={PROBE}", "--artifacts", str(scratch / "artifacts")],
            cwd=REPO, env={**os.environ, "CODEBOX_HOME": str(home)}, capture_output=True, text=True, timeout=600)
        samples.append(time.monotonic() - started)
        if done.returncode != 0 or '"active": true' not in done.stdout:
            raise SystemExit(f"{backend} one-shot run failed ({done.returncode}): {done.stderr[-800:]}")
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=5, help="samples per row (default 5)")
    args = parser.parse_args()  # --help prints the above and runs nothing

    home = Path(tempfile.mkdtemp(prefix="codebox-bench-native-home-"))
    scratch = Path(tempfile.mkdtemp(prefix="codebox-bench-native-work-"))
    os.environ["CODEBOX_HOME"] = str(home)
    os.environ["CODEBOX_SPARE_SANDBOXES"] = "off"
    sys.path.insert(0, str(REPO))
    from codebox_tui.contracts.runtime import RuntimePolicy
    from codebox_tui.runtime.backend import SandboxSpec
    from codebox_tui.runtime.mounts import PrivateCopy, parse_mount
    from codebox_tui.runtime.native import NativeBackend
    from codebox_tui.runtime.native_site import host_php
    from codebox_tui.runtime.playground import PlaygroundBackend, shutdown_sidecars
    from codebox_tui.settings import reload_settings
    from codebox_tui.versions import DEFAULT_PHP_VERSION

    reload_settings()
    policy = RuntimePolicy(commands=["wordpress.run-php"], network="deny")
    counter = iter(range(10**6))

    def spec_for(php: str) -> Any:
        def make() -> SandboxSpec:
            copy = scratch / f"copy-{next(counter)}"  # what a run's copy-on-write private copy is
            shutil.copytree(PLUGIN, copy)
            mount = parse_mount(f"{PLUGIN}:/wordpress/wp-content/plugins/simple-plugin", 0)
            return SandboxSpec(mounts=[mount], policy=policy, php=php,
                               private_copies={0: PrivateCopy(0, copy, copy)})
        return make

    print(f"load average before: {os.getloadavg()}  cpus: {os.cpu_count()}  host PHP {host_php().version}",
          flush=True)
    native, playground = NativeBackend(), PlaygroundBackend()
    try:
        # untimed: golden site, native prepared install, the Playground sidecar and its prepared copies
        boot_and_request(native, spec_for(host_php().series), 1)
        boot_and_request(playground, spec_for(DEFAULT_PHP_VERSION), 2)
        native_ready, native_request, native_disk = boot_and_request(native, spec_for(host_php().series), args.n)
        pg_ready, pg_request, _ = boot_and_request(playground, spec_for(DEFAULT_PHP_VERSION), args.n)
    finally:
        shutdown_sidecars()
    native_runs = one_shot_runs("native", args.n, home, scratch)
    pg_runs = one_shot_runs("playground", args.n, home, scratch)
    print(f"load average after: {os.getloadavg()}", flush=True)
    print()
    print(f"| median of {args.n} | native | playground | native / playground |")
    print("|---|---|---|---|")
    for label, ours, theirs in (("new sandbox ready (s)", native_ready, pg_ready),
                                ("one request loading WordPress (s)", native_request, pg_request),
                                ("one-shot `codebox run` of the example probe (s)", native_runs, pg_runs)):
        a, b = median_seconds(ours), median_seconds(theirs)
        print(f"| {label} | {a:.3f} | {b:.3f} | {a / b:.2f}x |")
    print(f"| disk per native sandbox (MB) | {statistics.median(native_disk) / 1e6:.1f} | | |")
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
