"""The capture of a plain run: the real capture code (bundle/capture.py) over mounts changed since their baselines,
for a run of ``wordpress.run-php`` that left no metadata, secrets, evidence or tests (the bundle tests' and the
demo bundles' set-up)."""

from __future__ import annotations

from pathlib import Path

from codebox_tui.bundle.baseline import Baseline
from codebox_tui.bundle.capture import BundleSummary, capture_bundle
from codebox_tui.contracts.common import utc_now_iso
from codebox_tui.contracts.runtime import MountSpec, RuntimeInfo, RuntimePolicy


def capture_plain_run(
    run_dir: Path, mounts: list[MountSpec], baselines: list[Baseline], runtime: RuntimeInfo | None = None
) -> BundleSummary:
    """Capture ``run_dir`` as the bundle of such a run; ``runtime`` by default id ``rt``, created now."""
    return capture_bundle(
        run_dir,
        runtime=runtime if runtime is not None else RuntimeInfo(id="rt", createdAt=utc_now_iso(), environment={}),
        mounts=mounts,
        baselines=baselines,
        policy=RuntimePolicy(commands=["wordpress.run-php"]),
        metadata={},
        secret_values=[],
        evidence=[],
        test_suites=[],
    )
