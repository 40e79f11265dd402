"""Benchmark: `codebox exec` on a warm sandbox (docs/exec.md).

Rows (all measured in this one invocation, on this machine, the sandbox booted once and warmed):
  * a simple read round trip from Python (`cat wp-load.php | wc -c`): target < 100 ms
  * `on rg -l -F 'function wp_insert_post(' --core --plugins` over WordPress core plus a mounted plugin
    (the example plugin): target < 1 s
  * the same search with a regular expression (`-i -w`)
  * classification alone (a refused write: nothing runs)
  * exec-denied / boot: `codebox exec`'s host check that refuses a command before any boot
    (check_before_boot), as a ratio of this run's own boot time: target < 0.1

Usage: python bench/bench_exec.py [-n N]
Each row prints the median and the minimum of N runs after one warm-up run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("CODEBOX_HOME", tempfile.mkdtemp(prefix="codebox-bench-exec-"))
os.environ.setdefault("CODEBOX_SPARE_SANDBOXES", "off")

from codebox_tui.contracts.exec import ExecRequest  # noqa: E402
from codebox_tui.contracts.runtime import RuntimePolicy  # noqa: E402
from codebox_tui.errors import PolicyDeniedError  # noqa: E402
from codebox_tui.runtime.backend import SandboxSpec  # noqa: E402
from codebox_tui.runtime.exec import check_before_boot, run_exec  # noqa: E402
from codebox_tui.runtime.mounts import parse_mount  # noqa: E402
from codebox_tui.runtime.playground import shutdown_sidecars  # noqa: E402
from codebox_tui.runtime.session import RunSession  # noqa: E402

ROWS = [
    ("read round trip", "cat wp-load.php | wc -c", 0.1),
    ("on rg core+plugin (fixed)", "on rg -l -F 'function wp_insert_post(' --core --plugins", 1.0),
    ("on rg core+plugin (regex -i -w)", "on rg -l -i -w 'wp_insert_post' --core --plugins", 1.0),
    ("refused write (classification only)", "rm wp-load.php", 0.1),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=10)
    args = parser.parse_args()
    plugin = REPO / "examples" / "simple-plugin"
    spec = SandboxSpec(
        mounts=[parse_mount(f"{plugin}:/wordpress/wp-content/plugins/simple-plugin:readonly")],
        policy=RuntimePolicy(commands=["wordpress.run-php"], network="deny", secrets=[]),
        warm=True,
    )
    with RunSession(spec, Path(tempfile.mkdtemp(prefix="codebox-bench-exec-art-"))) as run:
        started = time.monotonic()
        run.boot_sandbox()
        boot_s = time.monotonic() - started
        print(f"boot (warm=True): {boot_s:.2f} s")
        denied = []
        for _ in range(max(1, args.n // 2)):
            t0 = time.perf_counter()
            try:
                check_before_boot(ExecRequest(command="rm wp-load.php"))
            except PolicyDeniedError:
                denied.append(time.perf_counter() - t0)
        if denied:
            ratio = statistics.median(denied) / boot_s
            print(
                f"exec-denied before boot: {statistics.median(denied) * 1000:.0f} ms median, "
                f"ratio to boot {ratio:.3f} (target < 0.1)  {'ok' if ratio < 0.1 else 'SLOW'}"
            )
        else:
            print("exec-denied before boot: NOT DENIED (the host check let a write through)")
        print(f"{'row':40} {'median':>10} {'min':>10} {'target':>8}  result")
        for label, command, target in ROWS:
            run_exec(run, ExecRequest(command=command))  # warm-up
            times = []
            for _ in range(args.n):
                t0 = time.perf_counter()
                result = run_exec(run, ExecRequest(command=command))
                times.append(time.perf_counter() - t0)
            median = statistics.median(times)
            verdict = "ok" if median < target else "SLOW"
            print(
                f"{label:40} {median * 1000:8.1f}ms {min(times) * 1000:8.1f}ms {target * 1000:6.0f}ms  {verdict} "
                f"(exit {result.exitCode}, {result.classification}, {len(result.stdout)} bytes)"
            )
    shutdown_sidecars()


if __name__ == "__main__":
    main()
