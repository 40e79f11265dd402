"""Output only is never a way around review (docs/exec.md, "Nothing to decide"; docs/security.md): an exec
that changes the site outside every mount — here a file it drops into wp-content, which no mount captures,
so the bundle's changed-file list is empty — still awaits a decision, because the host's site-state diff
of the run is not empty. Without the site-state half of `nothing_to_decide` this bundle would be recorded
as output only and never be looked at. The real CLI, one real Playground sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.playground

REPO = Path(__file__).resolve().parents[2]


def test_an_exec_that_writes_outside_the_mounts_awaits_a_decision(playground_session: Any, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "CODEBOX_HOME": str(playground_session.private_home(tmp_path))}

    def codebox(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "codebox_tui", *args], capture_output=True, text=True,
                              timeout=300, cwd=REPO, env=env, check=False)

    wrote = codebox("exec", "--capabilities", "read,write", "echo planted > /wordpress/wp-content/planted.txt")
    assert wrote.returncode == 0, wrote.stderr[-2000:]
    listed = codebox("review", "list", "--json")
    [bundle] = json.loads(listed.stdout)["bundles"]
    assert bundle["changed_files"] == 0  # nothing a mount captured …
    assert bundle["status"] == "pending"  # … and still a decision to make
    diff = json.loads((Path(bundle["path"]) / "files" / "site-state-diff.json").read_text())
    assert diff["empty"] is False
