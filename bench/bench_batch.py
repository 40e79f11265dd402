"""Benchmark: throughput of N `evaluate-patch` jobs through the batch runner on a local Ray instance vs the same
N jobs one after another in this process, measured in the same invocation on this machine.

Rows:
  * sequential: `evaluate_patch` N times in a row (one warm Playground sidecar in this process)
  * batch: `run_batch` of the same N items on a private local Ray instance sized to the machine (each worker
    starts its own sidecar: that cold start is part of the batch's time), bundles shipped back, verified and
    recorded
  * Ray start-up on its own (paid once per batch command)

Every job must end with verdict `improvement`, or the bench fails. The load average is printed (other
processes on the machine change the result).

Usage: python bench/bench_batch.py [-n 8] [--cpus C]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

os.environ.setdefault("CODEBOX_HOME", tempfile.mkdtemp(prefix="codebox-bench-batch-"))
os.environ.setdefault("CODEBOX_SPARE_SANDBOXES", "off")

from codebox_tui.batch import parse_batch_text, run_batch, start_local_ray, stop_ray  # noqa: E402
from codebox_tui.recipes.evaluate_patch import evaluate_patch  # noqa: E402

PLUGIN = REPO / "examples" / "plugins-for-recipes" / "buggy-counter"
PATCH = REPO / "examples" / "patches" / "buggy-counter-fix.patch"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=8)
    parser.add_argument("--cpus", type=int, default=None, help="CPUs of the local Ray instance (default: all)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="codebox-bench-batch-work-"))
    print(f"load average before: {os.getloadavg()}  cpus: {os.cpu_count()}", flush=True)

    started = time.monotonic()
    for i in range(args.n):
        out = evaluate_patch(PLUGIN, PATCH, artifacts_dir=work / "sequential")
        if out["tests"]["verdict"] != "improvement":
            print(f"sequential job {i}: verdict {out['tests']['verdict']}", file=sys.stderr)
            return 1
    sequential = time.monotonic() - started
    print(f"sequential: {args.n} jobs in {sequential:.1f} s", flush=True)

    text = "".join(
        json.dumps({"kind": "evaluate-patch", "id": f"job-{i}", "plugin": str(PLUGIN), "patch": str(PATCH)}) + "\n"
        for i in range(args.n)
    )
    items = parse_batch_text(text, base_dir=REPO, name="bench.jsonl")
    started = time.monotonic()
    start_local_ray(args.cpus)
    ray_up = time.monotonic() - started
    try:
        outcome = run_batch(items, artifacts_root=work / "batch")
    finally:
        stop_ray()
    batch = time.monotonic() - started
    bad = [s.item.id for s in outcome.items if s.verdict != "improvement" or s.bundle_key is None]
    if bad:
        print(f"batch jobs without an improvement verdict or a recorded bundle: {bad}", file=sys.stderr)
        return 1
    print(f"load average after: {os.getloadavg()}", flush=True)
    print()
    print("| | seconds | jobs per minute |")
    print("|---|---|---|")
    print(
        f"| {args.n} `evaluate-patch` jobs one after another (one process, warm sidecar) | {sequential:.1f} | "
        f"{args.n * 60 / sequential:.2f} |"
    )
    print(
        f"| the same {args.n} through `run_batch` on local Ray ({args.cpus or os.cpu_count()} CPUs), Ray "
        f"start-up included | {batch:.1f} | {args.n * 60 / batch:.2f} |"
    )
    print(f"| … of which Ray start-up | {ray_up:.1f} | |")
    print(f"| speed-up | {sequential / batch:.2f}× | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
