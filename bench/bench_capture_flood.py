"""Benchmark: capture at the default tracking limit of uncaptured folders (docs/security-secrets.md, limits).

PHP in a real sandbox creates more than ``MAX_TRACKED_IN_SKIPPED`` (200,000) files in a read-write mount's
``node_modules`` (a folder whose contents are never captured) and plants a script beside them; the run goes
through the real CLI (`codebox run --json`: boot, the command, capture, verify, the inbox). The benchmark
fails unless the review carries both risk flags, `changes-in-uncaptured-directories` and
`capture-limit-exceeded:skipped-directory-not-tracked`.

Rows: the whole run and its parts as the run document reports them (boot, the flood command, the site-state
summaries, capture).
The same attack at a lowered limit runs in every `make test` (tests/security/test_secrets_and_limits.py).
Usage: python bench/bench_capture_flood.py [--count N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from codebox_tui.bundle.diff import MAX_TRACKED_IN_SKIPPED  # noqa: E402
from tests.factories.flood import FLOOD_TARGET, UNCAPTURED_FLOOD_PHP  # noqa: E402

FLAGS = ("changes-in-uncaptured-directories", "capture-limit-exceeded:skipped-directory-not-tracked")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=MAX_TRACKED_IN_SKIPPED + 10)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="codebox-bench-flood-"))
    try:
        plugin = work / "victim"
        shutil.copytree(REPO / "examples" / "simple-plugin", plugin)
        env = {**os.environ, "CODEBOX_HOME": str(work / "home"), "CODEBOX_SPARE_SANDBOXES": "off"}
        started = time.monotonic()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "codebox_tui",
                "run",
                "--mount",
                f"{plugin}:{FLOOD_TARGET}:readwrite",
                "--command",
                "wordpress.run-php",
                "--arg",
                "code=" + UNCAPTURED_FLOOD_PHP % {"count": args.count},
                "--timeout",
                "20m",
                "--artifacts",
                str(work / "runs"),
                "--json",
                "--quiet",
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
            timeout=3600,
        )
        total = time.monotonic() - started
        if done.returncode != 0:
            print(f"the run failed (exit {done.returncode}): {done.stderr[-2000:]}")
            return 1
        document = json.loads(done.stdout)
        timings = document["timings"]
        bundle = Path(document["artifacts"]["directory"])
        flags = json.loads((bundle / "files" / "review.json").read_text())["riskFlags"]
        missing = [flag for flag in FLAGS if flag not in flags]
        print(f"files planted in node_modules            {args.count:,}")
        print(f"whole run, new process                   {total:7.1f} s")
        for name in ("bootSeconds", "commandSeconds", "siteStateSeconds", "captureSeconds"):
            print(f"  {name:<38} {timings.get(name, 0):7.1f} s")
        print(
            f"risk flags                               {'both raised' if not missing else 'MISSING ' + ', '.join(missing)}"
        )
        return 1 if missing else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
