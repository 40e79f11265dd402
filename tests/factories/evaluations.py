"""``codebox evaluate-patch`` on the native backend, run as a child process the way a user runs it (the tests
whose subject is the evaluation's documents, not the sandbox: the verdict, evidence and bench documents are the
same on both backends, and native is the faster one for CI)."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from tests.factories.held import codebox


def evaluate_natively(
    home: Path, plugin: Path, change: Sequence[str], artifacts: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    """``codebox evaluate-patch --backend native --plugin PLUGIN CHANGE --artifacts-dir ARTIFACTS --json EXTRA``
    with ``CODEBOX_HOME=home``; ``change`` names the change (``--patch FILE`` or ``--git RANGE``)."""
    return codebox(
        home,
        "evaluate-patch",
        "--backend",
        "native",
        "--plugin",
        str(plugin),
        *change,
        "--artifacts-dir",
        str(artifacts),
        "--json",
        *extra,
        timeout=900,
    )
