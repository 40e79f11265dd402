"""`codebox release ID` ends a hold from another terminal, through the real CLI on a real native sandbox: the
holder records why its hold ended, captures its bundle and exits 0, as when the hold expires; an id nobody holds
is a clear error (exit 2) that releases nothing (docs/exec.md, "Held sandboxes")."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.factories.held import HeldCommand, codebox
from tests.factories.holds import linked_home

pytestmark = pytest.mark.native


@pytest.fixture()
def short_home(codebox_home: Path) -> Iterator[Path]:
    """A home of the test's own under a short path: the control socket's path must fit a Unix socket address
    (108 bytes), which xdist's per-test folders can exceed."""
    short = Path(tempfile.mkdtemp(prefix="cbx-", dir="/tmp"))
    try:
        yield linked_home(codebox_home, short)
    finally:
        shutil.rmtree(short, ignore_errors=True)


def test_release_ends_a_hold_and_the_holder_captures_its_bundle(short_home: Path) -> None:
    home = short_home
    held = HeldCommand(home, "boot", "--backend", "native", "--hold", "30m")
    try:
        _where, runtime_id = held.wait_held()
        unknown = codebox(home, "release", "runtime-nobody-holds-this", "--json")
        assert unknown.returncode == 2, unknown.stdout + unknown.stderr
        assert json.loads(unknown.stdout)["error"]["code"] == "no-held-sandbox"
        assert held.proc.poll() is None  # still held
        released = codebox(home, "release", runtime_id, "--json")
        assert released.returncode == 0, released.stdout + released.stderr
        assert json.loads(released.stdout) == {"success": True, "sandbox": runtime_id, "released": True}
        assert held.wait_exit() == 0, held.stderr
    finally:
        held.kill()
    _bundle, events = held.bundle_events()
    ended = [e["data"]["reason"] for e in events if e["type"] == "runtime.hold-ended"]
    assert ended == ["closed"]
    assert "runtime.release-requested" in [e["type"] for e in events]
    assert not (home / "held" / f"{runtime_id}.sock").exists()  # the control socket went with the hold
