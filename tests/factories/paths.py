"""Where the repository and its example plugin are, for tests that run the CLI or mount the example."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_PLUGIN = REPO / "examples" / "simple-plugin"
