"""Run every benchmark under bench/ in turn (``make bench``); each prints its own table."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Comparisons against another checkout (an old commit exported from the history), run by hand when a change's
# cost is judged: not part of the suite of this tree's own numbers.
BY_HAND = {"bench_boot_ab.py"}


def main() -> int:
    argparse.ArgumentParser(description=__doc__).parse_args()  # --help prints this and runs nothing
    failures = 0
    for script in sorted(HERE.glob("bench_*.py")):
        if script.name in BY_HAND:
            continue
        print(f"\n=== {script.name} ===", flush=True)
        result = subprocess.run([sys.executable, str(script)], cwd=HERE.parent)
        if result.returncode != 0:
            print(f"{script.name} exited {result.returncode}", flush=True)
            failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
