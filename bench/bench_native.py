"""Benchmark: the native backend against Playground, both measured in this one invocation on this machine.

Rows (medians of N; a private CODEBOX_HOME, golden site and native prepared install made first, untimed):
  * new sandbox ready: ``Backend.boot`` of a sandbox with the example plugin mounted (copy-on-write), to
    the moment commands can run; Playground with its sidecar already running and spares off
  * one PHP request that loads WordPress (``require wp-load.php``) in a booted sandbox
  * one-shot ``codebox run`` of the example plugin's probe: a new ``codebox`` process each time, boot,
    probe, capture, verify, record; and the part of it after the result line is printed, to the exit
  * one-shot ``codebox evaluate-patch`` of buggy-counter with its fix (examples/patches): a new process each
    time, boot, PHPUnit before and after, the front-end and browser probes, capture; native and Playground
    alternated round by round (which goes first alternates too), after one untimed run of each
  * disk per native sandbox (its folder: wp-content with the database, config, temp); a native sandbox
    keeps no process between commands but its page-request worker
  * native page requests, before and after the persistent worker, alternating in one booted sandbox: a new
    confined ``php-cgi`` process per request (how page requests were served before; rebuilt here from the
    sandbox's own command line, for the comparison only) against ``Sandbox.request`` through the sandbox's
    persistent worker (runtime/native_worker.py), for a REST route (WordPress loaded, little rendering), the
    front page and a static core asset; the worker's memory (PSS of its processes) after them

With ``--boot-only``, native only: a new sandbox ready with the example plugin and with a plugin carrying a
large ``vendor/`` (a copy of core's ``wp-includes``), and the memory its data file system holds at ready
(a tmpfs: the template, the compiled-script cache and the upper layers of the copy-on-write mounts' overlays;
runtime/native_limits.py).

With ``--evaluate-only``, only the evaluate-patch row.

Issue #28's targets: ready <= 0.3 s, one request <= 60 ms, one-shot run <= 0.2x Playground's, evaluate-patch
<= 0.25x Playground's.
The load average is printed (other processes on the machine change the result).

Usage: python bench/bench_native.py [-n N] [--requests-only | --boot-only | --evaluate-only]
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
PLUGIN = REPO / "examples" / "simple-plugin"
PROBE = PLUGIN / "probe.php"
BUGGY_COUNTER = REPO / "examples" / "plugins-for-recipes" / "buggy-counter"
FIX = REPO / "examples" / "patches" / "buggy-counter-fix.patch"
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


def boot_memory(backend: Any, spec_for: Any, n: int) -> tuple[list[float], list[int]]:
    """Boot ``n`` native sandboxes one after another: seconds to ready, and the bytes its data file system
    (a tmpfs: memory) holds then."""
    ready, held = [], []
    for _ in range(n):
        spec = spec_for()
        started = time.monotonic()
        sandbox = backend.boot(spec)
        ready.append(time.monotonic() - started)
        try:
            stats = os.statvfs(sandbox.disk.folder)
            held.append((stats.f_blocks - stats.f_bfree) * stats.f_frsize if sandbox.disk.mounted else 0)
        finally:
            sandbox.dispose()
    return ready, held


PAGE_PATHS = (
    ("REST route `/?rest_route=/wp/v2/types`", "/?rest_route=/wp/v2/types"),
    ("front page `/`", "/"),
    ("static asset `/wp-includes/images/blank.gif`", "/wp-includes/images/blank.gif"),
)


def one_process_request(sandbox: Any, path: str) -> int:
    """A page request the way it was served before the worker: one new confined ``php-cgi`` process (the CGI
    variables in its environment, the router as its script); its HTTP status."""
    from codebox_tui.runtime.native_cgi import CgiRequest, cgi_environment, parse_cgi_response

    env = cgi_environment(CgiRequest("GET", path), host="127.0.0.1", port=int(sandbox.preview_url.rsplit(":", 1)[1]))
    done = subprocess.run(sandbox.php_argv([], env, cgi=True), input=b"", capture_output=True, timeout=120, check=False)
    return parse_cgi_response(done.stdout).status


def worker_pss_kb(sandbox: Any) -> int:
    """The proportional resident memory (PSS: shared pages split between the processes sharing them) of the
    sandbox's worker: bwrap and every process under it (php-cgi and its request processes), in KiB."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    tree = {sandbox.worker.pid}
    while grown := {pid for pid, parent in parents.items() if parent in tree} - tree:
        tree |= grown
    total = 0
    for pid in tree - {None}:
        try:
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
            total += int(next(line.split()[1] for line in rollup.splitlines() if line.startswith("Pss:")))
        except (OSError, ValueError, StopIteration):
            continue
    return total


def page_requests(backend: Any, spec: Any, n: int) -> tuple[dict[str, tuple[list[float], list[float]]], int]:
    """For each of :data:`PAGE_PATHS`: ``n`` seconds per request with a new process each, and ``n`` through the
    persistent worker, alternating (one warm-up of each first); and the worker's PSS in KiB afterwards."""
    sandbox = backend.boot(spec)
    try:
        results: dict[str, tuple[list[float], list[float]]] = {}
        for label, path in PAGE_PATHS:
            before: list[float] = []
            after: list[float] = []
            for i in range(n + 1):
                started = time.monotonic()
                status = one_process_request(sandbox, path)
                took_before = time.monotonic() - started
                started = time.monotonic()
                response = sandbox.request(path, 120)
                took_after = time.monotonic() - started
                if status != 200 or response.status != 200:
                    raise SystemExit(f"native page request {path}: {status} / {response.status}")
                if i:  # the first of each is the warm-up (the worker starts at the first request)
                    before.append(took_before)
                    after.append(took_after)
            results[label] = (before, after)
        return results, worker_pss_kb(sandbox)
    finally:
        sandbox.dispose()


def _user_env(home: Path) -> dict[str, str]:
    """What an installed Codebox gets: its modules' compiled bytecode cached (a machine or CI environment may set
    PYTHONDONTWRITEBYTECODE, and every run would then compile the changed modules again)."""
    return {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "CODEBOX_HOME": str(home)}


def one_evaluation(backend: str, home: Path, scratch: Path) -> float:
    """Seconds of one ``codebox evaluate-patch`` process, start to exit; its verdict must be ``improvement``."""
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "codebox_tui",
            "evaluate-patch",
            "--backend",
            backend,
            "--quiet",
            "--json",
            "--plugin",
            str(BUGGY_COUNTER),
            "--patch",
            str(FIX),
            "--artifacts",
            str(scratch / "evaluations"),
        ],
        cwd=REPO,
        env=_user_env(home),
        capture_output=True,
        text=True,
        timeout=900,
    )
    elapsed = time.monotonic() - started
    try:
        verdict = json.loads(done.stdout)["tests"]["verdict"]
    except (ValueError, KeyError, TypeError):
        verdict = None
    if done.returncode != 0 or verdict != "improvement":
        raise SystemExit(f"{backend} evaluate-patch failed ({done.returncode}): {done.stderr[-800:]}")
    return elapsed


def evaluation_runs(n: int, home: Path, scratch: Path) -> dict[str, list[float]]:
    """``n`` evaluations per backend, alternated round by round (the first backend alternates too), after one
    untimed evaluation of each (the Playground sidecar's and the browser's first start, the prepared sites)."""
    samples: dict[str, list[float]] = {"native": [], "playground": []}
    for backend in samples:
        one_evaluation(backend, home, scratch)
    for i in range(n):
        for backend in ("native", "playground") if i % 2 == 0 else ("playground", "native"):
            samples[backend].append(one_evaluation(backend, home, scratch))
    return samples


def one_shot_runs(backend: str, n: int, home: Path, scratch: Path) -> tuple[list[float], list[float]]:
    """``n`` one-shot runs: seconds from the start of each ``codebox`` process to its exit, and from its result
    line on stderr ("codebox: ok in …", printed even with --quiet) to its exit (what the process still does
    after the user has the result: issue #27, item 1)."""
    samples, after_result = [], []
    for i in range(n):
        plugin = scratch / f"{backend}-plugin-{i}"
        shutil.copytree(PLUGIN, plugin)
        started = time.monotonic()
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "codebox_tui",
                "run",
                "--backend",
                backend,
                "--quiet",
                "--mount",
                f"{plugin}:/wordpress/wp-content/plugins/simple-plugin",
                "--command",
                "wordpress.run-php",
                "--arg",
                f"code-file={PROBE}",
                "--artifacts",
                str(scratch / "artifacts"),
            ],
            cwd=REPO,
            env=_user_env(home),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stderr is not None and process.stdout is not None
        result_at, errors = None, []
        for line in process.stderr:  # stdout is small (the probe's JSON): read once stderr ends
            errors.append(line)
            if line.startswith(("codebox: ok in", "codebox: failed in")):
                result_at = time.monotonic()
        stdout = process.stdout.read()
        code = process.wait(timeout=600)
        ended = time.monotonic()
        samples.append(ended - started)
        after_result.append(ended - (result_at or ended))
        if code != 0 or '"active": true' not in stdout:
            raise SystemExit(f"{backend} one-shot run failed ({code}): {''.join(errors)[-800:]}")
    return samples, after_result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=5, help="samples per row (default 5)")
    parser.add_argument(
        "--requests-only", action="store_true", help="only the native page-request rows (no Playground)"
    )
    parser.add_argument(
        "--boot-only", action="store_true", help="only native boots, with a small and a large plugin (no Playground)"
    )
    parser.add_argument("--evaluate-only", action="store_true", help="only the evaluate-patch row")
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

    def spec_for(php: str, plugin: Path = PLUGIN) -> Any:
        def make() -> SandboxSpec:
            copy = scratch / f"copy-{next(counter)}"  # what a run's copy-on-write private copy is
            shutil.copytree(plugin, copy, symlinks=True)
            mount = parse_mount(f"{PLUGIN}:/wordpress/wp-content/plugins/simple-plugin", 0)
            return SandboxSpec(mounts=[mount], policy=policy, php=php, private_copies={0: PrivateCopy(0, copy, copy)})

        return make

    print(f"load average before: {os.getloadavg()}  cpus: {os.cpu_count()}  host PHP {host_php().version}", flush=True)
    if args.evaluate_only:
        return evaluate_rows(args.n, home, scratch)
    native, playground = NativeBackend(), PlaygroundBackend()
    boot_and_request(native, spec_for(host_php().series), 1)  # untimed: golden site, prepared install, seed
    if args.boot_only:
        return boot_rows(native, spec_for, host_php().series, args.n, home, scratch)
    pages, pss_kb = page_requests(native, spec_for(host_php().series)(), args.n)
    print(f"load average after the page requests: {os.getloadavg()}", flush=True)
    print()
    print(
        f"| native page request, median of {args.n} (s) | a new php-cgi process each (before) "
        "| persistent worker (after) | after / before |"
    )
    print("|---|---|---|---|")
    for label, (before, after) in pages.items():
        a, b = median_seconds(before), median_seconds(after)
        print(f"| {label} | {a:.3f} | {b:.3f} | {b / a:.2f}x |")
    print(f"| worker memory after them (PSS, MB) | | {pss_kb / 1024:.1f} | |")
    print()
    if args.requests_only:
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
        return 0
    try:
        # untimed: the Playground sidecar and its prepared copies
        boot_and_request(playground, spec_for(DEFAULT_PHP_VERSION), 2)
        native_ready, native_request, native_disk = boot_and_request(native, spec_for(host_php().series), args.n)
        pg_ready, pg_request, _ = boot_and_request(playground, spec_for(DEFAULT_PHP_VERSION), args.n)
    finally:
        shutdown_sidecars()
    native_runs, native_after = one_shot_runs("native", args.n, home, scratch)
    pg_runs, pg_after = one_shot_runs("playground", args.n, home, scratch)
    evaluations = evaluation_runs(args.n, home, scratch)
    print(f"load average after: {os.getloadavg()}", flush=True)
    print()
    print(f"| median of {args.n} | native | playground | native / playground |")
    print("|---|---|---|---|")
    for label, ours, theirs in (
        ("new sandbox ready (s)", native_ready, pg_ready),
        ("one request loading WordPress (s)", native_request, pg_request),
        ("one-shot `codebox run` of the example probe (s)", native_runs, pg_runs),
        ("… of which after its result line is printed (s)", native_after, pg_after),
        ("one-shot `codebox evaluate-patch` of buggy-counter, alternated (s)", *evaluations.values()),
    ):
        a, b = median_seconds(ours), median_seconds(theirs)
        print(f"| {label} | {a:.3f} | {b:.3f} | {f'{a / b:.2f}x' if b else '-'} |")
    print(f"| disk per native sandbox (MB) | {statistics.median(native_disk) / 1e6:.1f} | | |")
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)
    return 0


def evaluate_rows(n: int, home: Path, scratch: Path) -> int:
    """The ``--evaluate-only`` table."""
    samples = evaluation_runs(n, home, scratch)
    print(f"load average after: {os.getloadavg()}", flush=True)
    print()
    print(f"| median of {n}, alternated | native | playground | native / playground |")
    print("|---|---|---|---|")
    a, b = median_seconds(samples["native"]), median_seconds(samples["playground"])
    print(f"| one-shot `codebox evaluate-patch` of buggy-counter (s) | {a:.3f} | {b:.3f} | {a / b:.2f}x |")
    print(
        f"| every sample (s) | {', '.join(f'{x:.2f}' for x in samples['native'])} | "
        f"{', '.join(f'{x:.2f}' for x in samples['playground'])} | |"
    )
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)
    return 0


def boot_rows(native: Any, spec_for: Any, php: str, n: int, home: Path, scratch: Path) -> int:
    """The ``--boot-only`` table: ready and memory with the example plugin and with a large ``vendor/``."""
    from codebox_tui.runtime.native_limits import footprint

    core = next(home.rglob("wp-includes/version.php")).parent.parent  # the golden site's core, made above
    large = scratch / "large-plugin"
    shutil.copytree(PLUGIN, large)
    shutil.copytree(core / "wp-includes", large / "vendor", symlinks=True)
    size, entries = footprint(large)
    rows = []
    for label, plugin in (
        ("the example plugin", PLUGIN),
        (f"a plugin with a large vendor/ ({entries} entries)", large),
    ):
        ready, held = boot_memory(native, spec_for(php, plugin), n)
        rows.append((label, median_seconds(ready), statistics.median(held)))
    print(f"load average after: {os.getloadavg()}  (large plugin: {size / 1e6:.1f} MB with margin)", flush=True)
    print()
    print(f"| native, median of {n} | new sandbox ready (s) | data file system at ready (memory, MB) |")
    print("|---|---|---|")
    for label, ready_s, held_bytes in rows:
        print(f"| {label} | {ready_s:.3f} | {held_bytes / 1e6:.1f} |")
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
