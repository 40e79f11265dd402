"""MCP ``batch`` end to end: the MCP SDK's own client against a real ``codebox mcp`` server, whose ``batch`` tool
runs ``codebox batch`` on its private local Ray instance (real Ray workers) with two recipe items on native
sandboxes (``CODEBOX_BACKEND=native``, docs/backends.md). The batch file names the shipped example recipes by
paths relative to itself and gives no ``root``: both recipes mount ``../plugins-for-recipes/…``, which the
worker's copy must carry (docs/scale-out.md) — before that fix each item failed "recipe is not valid"."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from codebox_tui.bundle.verify import verify_bundle
from store.db import Store
from tests.factories.mcp import structured, with_client
from tests.factories.paths import REPO

pytestmark = [pytest.mark.native, pytest.mark.timeout(900)]

RECIPES = REPO / "examples" / "recipes"
ITEMS = {"probe": "plugin-probe.json", "word-count": "reproduce-word-count.json"}


def test_a_two_item_recipe_batch_over_mcp_on_real_ray(codebox_home: Path, tmp_path: Path) -> None:
    batch_file = tmp_path / "batches" / "recipes.jsonl"
    batch_file.parent.mkdir()
    batch_file.write_text(
        "".join(
            json.dumps({"kind": "recipe-run", "id": item, "recipe": os.path.relpath(RECIPES / name, batch_file.parent)})
            + "\n"
            for item, name in ITEMS.items()
        ),
        encoding="utf-8",
    )
    artifacts = tmp_path / "artifacts"
    log = tmp_path / "server.log"
    progress: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    async def body(session: ClientSession) -> Any:
        return await session.call_tool(
            "batch",
            {"file": str(batch_file), "concurrency": 2, "artifacts": str(artifacts)},
            progress_callback=on_progress,
        )

    result = with_client(codebox_home, log, body, env={"CODEBOX_BACKEND": "native"})
    out = structured(result, log)
    doc = out["document"]
    assert out["bundle"] is None and doc["schema"] == "codebox/batch/v1", doc.get("schema")
    items = {item["id"]: item for item in doc["items"]}
    assert set(items) == set(ITEMS)
    for item_id, item in items.items():
        assert item["error"] is None, (item_id, item["error"], log.read_text(errors="replace")[-3000:])
        assert item["state"] == "completed" and item["success"] is True and item["attempts"] == 1, (item_id, item)
        assert item["kind"] == "recipe-run" and item["summary"]["status"] in ("passed", "reproduced"), item
        bundle = Path(item["bundleDir"])
        assert bundle.is_relative_to(artifacts) and verify_bundle(bundle).valid, item_id
        provenance = json.loads((bundle / "metadata.json").read_text())["provenance"]
        assert provenance["runtime"]["backend"] == "native", item_id
    assert out["success"] is True and doc["counts"] == {"completed": 2}
    with Store.open() as store:
        recorded = {b.path for b in store.list_bundles()}
    assert {item["bundleDir"] for item in items.values()} <= {str(p) for p in recorded}
    assert any("probe" in line for line in progress), progress
