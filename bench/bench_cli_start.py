"""Benchmark: how long the `codebox` command takes to start (issue #27, CLI start-up).

Rows (all measured in this one invocation, on this machine, each a new process):
  * `python -c pass`: the interpreter alone (the floor)
  * `python -c "import typer"`: the CLI framework alone
  * `codebox --help`
  * `codebox commands --json` (a real sub-command that boots nothing)
  * the import of `codebox_tui.cli` alone, in microseconds, from `python -X importtime`
The ratio row is `codebox --help` over `import typer`: what Codebox itself adds to a start.

Usage: python bench/bench_cli_start.py [-n N]
Each row prints the median and the minimum of N runs after one warm-up run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CODEBOX = [sys.executable, "-m", "codebox_tui"]


def _timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def _import_us(env: dict[str, str]) -> int:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import codebox_tui.cli"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    line = next(x for x in result.stderr.splitlines() if x.rstrip().endswith("| codebox_tui.cli"))
    return int(line.split("|")[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=7, help="runs per row (default 7)")
    args = parser.parse_args()
    env = {**os.environ, "CODEBOX_HOME": tempfile.mkdtemp(prefix="codebox-bench-start-")}
    rows = [
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("import typer", [sys.executable, "-c", "import typer"]),
        ("codebox --help", [*CODEBOX, "--help"]),
        ("codebox commands --json", [*CODEBOX, "commands", "--json"]),
    ]
    print(f"load average before: {os.getloadavg()}  cpus: {os.cpu_count()}")
    print(f"{'row':28} {'median':>9} {'min':>9}")
    medians: dict[str, float] = {}
    for label, command in rows:
        _timed(command, env)  # warm-up: page cache, .pyc files
        times = [_timed(command, env) for _ in range(args.n)]
        medians[label] = statistics.median(times)
        print(f"{label:28} {medians[label]:8.3f}s {min(times):8.3f}s")
    imports = sorted(_import_us(env) for _ in range(args.n))
    print(f"{'import codebox_tui.cli':28} {statistics.median(imports) / 1e6:8.3f}s {imports[0] / 1e6:8.3f}s")
    print(f"ratio codebox --help / import typer: {medians['codebox --help'] / medians['import typer']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
