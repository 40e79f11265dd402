"""Nothing to decide (docs/exec.md, "Nothing to decide"), through the real CLI: a read-only `codebox exec` on a
fresh sandbox is recorded as an output-only bundle (listed, never awaiting a decision, every decision refused with
the reason); an exec that wrote a file is a normal pending bundle. Two fresh sandboxes for the whole module, in one
private home, on the native backend (what is tested is how the store records an exec, the same on both backends;
each bundle checks the backend it records). The queries after them run through the real entry point in-process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.factories.held import codebox
from tests.factories.holds import codebox_in_process, linked_home
from tests.factories.native import NATIVE, recorded_backend

pytestmark = pytest.mark.native

PLUGIN = "/wordpress/wp-content/plugins/notes"


@pytest.fixture(scope="module")
def inbox(codebox_home: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A read-only `cat` and a write into the mounted folder, each `codebox exec` on a fresh sandbox."""
    root = tmp_path_factory.mktemp("output-only")
    home = linked_home(codebox_home, root)
    folder = root / "notes"
    folder.mkdir()
    (folder / "readme.txt").write_text("read me\n")
    read = codebox(home, "exec", "--backend", "native", "-m", f"{folder}:{PLUGIN}", f"cat {PLUGIN}/readme.txt")
    assert read.returncode == 0, read.stderr[-2000:]
    wrote = codebox(
        home,
        "exec",
        "--backend",
        "native",
        "-m",
        f"{folder}:{PLUGIN}",
        "--capabilities",
        "read,write",
        f"echo changed > {PLUGIN}/new.txt",
    )
    assert wrote.returncode == 0, wrote.stderr[-2000:]
    listed = codebox_in_process(home, "review", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    bundles = sorted(json.loads(listed.stdout)["bundles"], key=lambda b: b["key"])
    assert len(bundles) == 2
    assert [recorded_backend(Path(b["path"])) for b in bundles] == [NATIVE, NATIVE]
    return {"home": home, "read": read, "read_bundle": bundles[0], "write_bundle": bundles[1]}


def test_a_read_only_exec_is_output_only(inbox: dict[str, Any]) -> None:
    assert inbox["read"].stdout == "read me\n"  # its output is printed as ever
    assert inbox["read_bundle"]["status"] == "informational"
    assert inbox["read_bundle"]["changed_files"] == 0
    table = codebox_in_process(inbox["home"], "review", "list")
    line = next(row for row in table.stdout.splitlines() if row.startswith(f"@{inbox['read_bundle']['key']} "))
    assert "output only" in line and "[exec]" in line
    pending = json.loads(codebox_in_process(inbox["home"], "review", "list", "--status", "pending", "--json").stdout)
    assert [b["key"] for b in pending["bundles"]] == [inbox["write_bundle"]["key"]]  # not awaiting a decision


@pytest.mark.parametrize("action", ["approve", "discard"])
def test_a_decision_on_an_output_only_bundle_says_why_it_cannot_act(inbox: dict[str, Any], action: str) -> None:
    ref = f"@{inbox['read_bundle']['key']}"
    refused = codebox_in_process(inbox["home"], "review", action, ref)
    assert refused.returncode == 2, refused.stderr
    assert f"{ref} is output only" in refused.stderr and "nothing to approve, discard" in refused.stderr
    assert "Traceback" not in refused.stderr
    shown = codebox_in_process(inbox["home"], "review", "show", ref)
    assert "status   output only" in shown.stdout


def test_an_exec_that_wrote_a_file_awaits_a_decision(inbox: dict[str, Any]) -> None:
    assert inbox["write_bundle"]["status"] == "pending" and inbox["write_bundle"]["changed_files"] == 1
    ref = f"@{inbox['write_bundle']['key']}"
    discarded = codebox_in_process(inbox["home"], "review", "discard", ref)
    assert discarded.returncode == 0, discarded.stderr
