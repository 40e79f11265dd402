"""Output only is never a way around review (docs/exec.md, "Nothing to decide"; docs/security.md): an exec
that changes the site outside every mount — here a file it drops into wp-content, which no mount captures,
so the bundle's changed-file list is empty — still awaits a decision, because the host's site-state diff
of the run is not empty. Without the site-state half of `nothing_to_decide` this bundle would be recorded
as output only and never be looked at. The real CLI, one real native sandbox (the rule under test is the host's,
the same for either backend; the bundle checks the backend it records); the query after it runs through the real
entry point in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.factories.held import codebox
from tests.factories.holds import codebox_in_process, linked_home
from tests.factories.native import NATIVE, recorded_backend

pytestmark = pytest.mark.native


def test_an_exec_that_writes_outside_the_mounts_awaits_a_decision(codebox_home: Path, tmp_path: Path) -> None:
    home = linked_home(codebox_home, tmp_path)
    wrote = codebox(
        home,
        "exec",
        "--backend",
        "native",
        "--capabilities",
        "read,write",
        "echo planted > /wordpress/wp-content/planted.txt",
    )
    assert wrote.returncode == 0, wrote.stderr[-2000:]
    listed = codebox_in_process(home, "review", "list", "--json")
    [bundle] = json.loads(listed.stdout)["bundles"]
    assert recorded_backend(Path(bundle["path"])) == NATIVE
    assert bundle["changed_files"] == 0  # nothing a mount captured …
    assert bundle["status"] == "pending"  # … and still a decision to make
    diff = json.loads((Path(bundle["path"]) / "files" / "site-state-diff.json").read_text())
    assert diff["empty"] is False
