"""Where the repository and its example plugin are, for tests that run the CLI or mount the example."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_PLUGIN = REPO / "examples" / "simple-plugin"


def shared_dir() -> Path:
    """The project's ``shared/`` folder beside the repository (``<repo>/../shared``; for a git worktree nested
    deeper, the nearest ancestor's ``shared``). CI lays it beside the clone, so a test that needs it fails
    loudly when it is missing instead of skipping."""
    for parent in REPO.parents:
        if (parent / "shared" / "spec").is_dir():
            return parent / "shared"
    raise FileNotFoundError(f"no shared/ folder beside {REPO} (expected {REPO.parent / 'shared'})")
