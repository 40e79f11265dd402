"""`codebox run --json` says where its sandbox was served and whether it was held (the `preview` block,
docs/contracts.md "Run and boot outputs"), through the real CLI on real native sandboxes: a plain run's preview
is destroyed with the run; a held one names the public address, the local one, the hold asked for, when it
began and ended and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.factories.held import codebox

pytestmark = pytest.mark.native

TUNNEL = "https://preview.example.test"


def _run(home: Path, *extra: str) -> dict:
    out = codebox(
        home, "run", "--backend", "native", "--command", "wordpress.run-php", "--arg", "code=echo 1;", "--json", *extra
    )
    assert out.returncode == 0, out.stdout + out.stderr
    doc = json.loads(out.stdout)
    assert doc["runtime"]["backend"] == "native"
    return doc


def test_a_plain_run_reports_its_preview_as_destroyed_with_it(tmp_path: Path) -> None:
    preview = _run(tmp_path / "home")["preview"]
    assert preview["lifecycle"] == "destroyed-on-completion" and preview["status"] == "expired-on-completion"
    assert preview["source"] == "live-native"
    assert preview["url"] == preview["localUrl"] and preview["localUrl"].startswith("http://127.0.0.1:")
    assert not {"holdSeconds", "heldAt", "endedAt", "endedBy", "publicUrl"} & set(preview)


def test_a_held_run_reports_its_hold_and_public_address(tmp_path: Path) -> None:
    preview = _run(tmp_path / "home", "--preview-hold", "1s", "--preview-public-url", TUNNEL)["preview"]
    assert preview["lifecycle"] == "held-after-run" and preview["source"] == "public-url-override"
    assert preview["url"] == preview["publicUrl"] == TUNNEL
    assert preview["localUrl"].startswith("http://127.0.0.1:")
    assert preview["holdSeconds"] == 1.0 and preview["endedBy"] == "expired"
    assert preview["heldAt"] <= preview["endedAt"]  # ISO-8601 UTC stamps compare as text
