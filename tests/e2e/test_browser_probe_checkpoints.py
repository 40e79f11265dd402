"""Named checkpoints and memory of `wordpress.browser-probe` (docs/browser.md) through one real `codebox run
--backend native` with real Chromium: a must-use plugin's front page shows a menu late, then grows its heap by
a few MB and says so; the probe records both moments by name, each with its own screenshot, the page's metrics
and its heap, in checkpoints.jsonl and memory.json, all in the sealed bundle."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.factories.browser_runs import native_page_run
from tests.factories.holds import codebox_in_process

pytestmark = pytest.mark.native

LATE_PAGE = r"""<?php
add_action( 'wp_footer', function () {
    ?>
    <script>
    window.addEventListener( 'load', function () {
        setTimeout( function () {
            var menu = document.createElement( 'nav' ); menu.id = 'late-menu'; menu.textContent = 'menu';
            document.body.append( menu );
            setTimeout( function () {
                window.codeboxKept = Array.from( { length: 400000 }, function ( _, i ) { return 'item-' + i; } );
                var grown = document.createElement( 'p' ); grown.id = 'grown'; grown.textContent = 'grown';
                document.body.append( grown );
            }, 300 );
        }, 300 );
    } );
    </script>
    <?php
} );
"""


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("probe-checkpoints")
    cli = native_page_run(
        work,
        ("codebox-late-page.php", LATE_PAGE),
        "wordpress.browser-probe",
        [
            "url=/",
            "capture=errors,memory",
            "checkpoint=menu@selector:#late-menu",
            "checkpoint=grown@selector:#grown",
            "checkpoint=later@200ms",
            "timeout=90s",
        ],
    )
    assert cli.returncode == 0, cli.stderr[-3000:]
    doc = json.loads(cli.stdout)
    return {
        "doc": doc,
        "browser": Path(doc["artifacts"]["directory"]) / "files" / "browser",
        "bundle": Path(doc["artifacts"]["directory"]),
    }


def test_named_checkpoints_are_recorded_in_order_with_their_own_evidence(probe: dict[str, Any]) -> None:
    lines = [json.loads(line) for line in (probe["browser"] / "checkpoints.jsonl").read_text().splitlines()]
    assert [c["name"] for c in lines] == ["load", "menu", "grown", "later", "captured"]
    named = [c for c in lines if c.get("named")]
    assert [(c["index"], c["wait"]) for c in named] == [
        (0, "selector:#late-menu"),
        (1, "selector:#grown"),
        (2, "200ms"),
    ]
    assert named[2]["offsetMs"] - named[1]["offsetMs"] >= 200
    for point in named:
        assert "error" not in point
        shot = probe["browser"] / point["screenshot"]
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert point["metrics"]["JSHeapUsedSize"] > 0 and point["metrics"]["Nodes"] > 0
    # the page grew its heap between the two moments, and the checkpoints show it
    assert named[1]["memory"]["heapUsedBytes"] - named[0]["memory"]["heapUsedBytes"] > 4_000_000


def test_memory_json_has_every_checkpoint_and_the_bundle_lists_the_evidence(probe: dict[str, Any]) -> None:
    memory = json.loads((probe["browser"] / "memory.json").read_text())
    assert memory["at"] == "captured" and memory["heapUsedBytes"] > 4_000_000
    assert [c["name"] for c in memory["checkpoints"]] == ["load", "menu", "grown", "later", "captured"]
    assert all(c["heapUsedBytes"] > 0 for c in memory["checkpoints"])
    summary = probe["doc"]["execution"]["result"]["json"]
    assert summary["status"] == "passed"
    listed = {f["path"] for f in json.loads((probe["bundle"] / "manifest.json").read_text())["files"]}
    for name in (
        "checkpoints.jsonl",
        "memory.json",
        "screenshot-checkpoint-menu.png",
        "screenshot-checkpoint-grown.png",
        "screenshot-checkpoint-later.png",
    ):
        assert f"files/browser/{name}" in listed and name in summary["files"]


def test_a_bad_checkpoint_is_refused_before_anything_boots(tmp_path: Path) -> None:
    home = tmp_path / "home"
    out = codebox_in_process(
        home,
        "run",
        "--backend",
        "native",
        "--command",
        "wordpress.browser-probe",
        "--arg",
        "url=/",
        "--arg",
        "checkpoint=menu",
        "--arg",
        "checkpoint=menu@2s",
        "--json",
    )
    assert out.returncode == 2, out.stderr
    error = json.loads(out.stdout)["error"]
    assert error["field"] == "checkpoint" and "unique NAME" in error["message"]
    assert not (home / "sandboxes").exists()  # nothing booted
