"""Shared helpers of the site-state tests (tests/e2e/test_site_state.py, tests/security/test_site_state_*.py,
tests/security/test_trusted_probes.py and the other files that moved to the native backend with them)."""

from __future__ import annotations

import json
from pathlib import Path

NATIVE = "native"
PLAYGROUND = "wordpress-playground"


def bundle_backend(bundle: Path | str) -> str:
    """The backend a sealed bundle records it ran on (``metadata.json`` ``runtime.backend``), so a test that moved to
    the native backend cannot silently run on Playground, nor the other way round."""
    metadata = json.loads((Path(bundle) / "metadata.json").read_text(encoding="utf-8"))
    return str(metadata["runtime"]["backend"])
