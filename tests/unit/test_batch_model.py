"""Batch files, shipped archives and batch records: pure logic, real files, a real SQLite store."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from codebox_tui.batch import parse_batch_file, parse_batch_text
from codebox_tui.batch.kinds import EvaluatePatchRequest
from codebox_tui.batch.transfer import TransferError, pack_dir, unpack
from codebox_tui.errors import BadInputError
from store.batches import batch_items, batch_of_bundles, create_batch, get_batch, promote, update_item
from store.db import Store

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PLUGIN = EXAMPLES / "plugins-for-recipes" / "buggy-counter"
PATCH = EXAMPLES / "patches" / "buggy-counter-fix.patch"


def _line(**fields: object) -> str:
    return json.dumps({"kind": "evaluate-patch", "plugin": str(PLUGIN), "patch": str(PATCH), **fields})


def test_items_are_parsed_with_ids_labels_and_shipped_inputs(tmp_path: Path) -> None:
    text = "\n".join(["# two candidates", _line(id="one"), "", _line(tests=["tests/CountTest.php"])])
    items = parse_batch_text(text, base_dir=tmp_path, name="b.jsonl")
    assert [i.id for i in items] == ["one", "item-2"]
    assert [i.line for i in items] == [2, 4]
    assert items[0].label == "buggy-counter + fix"
    request = items[1].request
    assert isinstance(request, EvaluatePatchRequest)
    assert request.slug == "buggy-counter" and request.patch_bytes == PATCH.read_bytes()
    assert request.args.tests == ["tests/CountTest.php"]
    out = unpack(request.plugin_tar, tmp_path / "shipped")
    assert (out / "buggy-counter.php").read_bytes() == (PLUGIN / "buggy-counter.php").read_bytes()
    assert (out / "tests" / "CountTest.php").is_file()


def test_relative_paths_resolve_against_the_batch_file(tmp_path: Path) -> None:
    (tmp_path / "p").symlink_to(PLUGIN)
    batch = tmp_path / "b.jsonl"
    batch.write_text(json.dumps({"kind": "evaluate-patch", "plugin": "p", "patch": str(PATCH)}) + "\n")
    assert parse_batch_file(batch)[0].request.slug == "buggy-counter"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("{not json", "b.jsonl line 1: not JSON"),
        ("[1, 2]", "b.jsonl line 1: expected a JSON object"),
        (json.dumps({"plugin": "x"}), "b.jsonl line 1, field 'kind': required"),
        (json.dumps({"kind": "deploy"}), "b.jsonl line 1, field 'kind': unknown kind 'deploy'"),
        (
            json.dumps({"kind": "evaluate-patch", "plugin": str(PLUGIN)}),
            "b.jsonl line 1, field 'patch': Field required",
        ),
        (_line(colour="red"), "b.jsonl line 1, field 'colour': Extra inputs are not permitted"),
        (_line(tests="one"), "b.jsonl line 1, field 'tests': Input should be a valid list"),
        (_line(plugin="/nowhere/at/all"), "b.jsonl line 1, field 'plugin': '/nowhere/at/all' is not a folder"),
        (_line(id="has space"), "b.jsonl line 1, field 'id': expected 1-64 letters"),
        (_line(wp="0.1"), "b.jsonl line 1, field 'wp':"),
        (json.dumps({"kind": "recipe-run", "recipe": "missing.json"}), "b.jsonl line 1, field 'recipe':"),
    ],
)
def test_malformed_lines_name_the_line_and_the_field(tmp_path: Path, line: str, expected: str) -> None:
    with pytest.raises(BadInputError) as caught:
        parse_batch_text(line, base_dir=tmp_path, name="b.jsonl")
    assert str(caught.value.message).startswith(expected), caught.value.message


def test_fan_out_makes_n_candidates_of_one_item(tmp_path: Path) -> None:
    from codebox_tui.batch import fan_out_items

    items = fan_out_items(json.loads(_line(sandbox_session_id="s-1")), 3, base_dir=tmp_path)
    assert [i.id for i in items] == ["candidate-1", "candidate-2", "candidate-3"]
    assert {i.sandbox_session_id for i in items} == {"s-1"} and items[2].request is items[0].request
    with pytest.raises(BadInputError, match="--fan-out must be between 1 and 64"):
        fan_out_items(json.loads(_line()), 0, base_dir=tmp_path)


def test_duplicate_ids_empty_files_and_missing_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="line 2, field 'id': 'a' is already used"):
        parse_batch_text(_line(id="a") + "\n" + _line(id="a"), base_dir=tmp_path, name="b.jsonl")
    with pytest.raises(BadInputError, match="no items"):
        parse_batch_text("# nothing\n\n", base_dir=tmp_path, name="b.jsonl")
    with pytest.raises(BadInputError, match="batch file not found"):
        parse_batch_file(tmp_path / "absent.jsonl")


def test_agent_task_items_ship_their_workspaces_relative_to_the_batch_file(tmp_path: Path) -> None:
    from codebox_tui.batch import agent_fan_out
    from codebox_tui.batch.kinds import AgentTaskShipment

    agent = EXAMPLES / "agents" / "example_agent.py"
    line = json.dumps(
        {
            "kind": "agent-task",
            "id": "a1",
            "sandbox_session_id": "s-9",
            "task": 'replace "a" with "b"',
            "workspaces": [f"{PLUGIN.relative_to(EXAMPLES)}:/workspace/counter"],
            "agent": ["/usr/bin/env", "python3", str(agent)],
        }
    )
    item = parse_batch_text(line, base_dir=EXAMPLES, name="b.jsonl")[0]
    shipment = item.request
    assert isinstance(shipment, AgentTaskShipment)
    assert shipment.request.sandbox_session_id == "s-9" and item.sandbox_session_id == "s-9"
    assert shipment.request.workspaces[0].source == PLUGIN  # relative to the batch file's folder
    out = unpack(shipment.workspaces[0], tmp_path / "ws")
    assert (out / "buggy-counter.php").read_bytes() == (PLUGIN / "buggy-counter.php").read_bytes()
    candidates = agent_fan_out(shipment.request, 3)
    assert [c.id for c in candidates] == ["candidate-1", "candidate-2", "candidate-3"]
    assert all(c.kind == "agent-task" and c.request.workspaces == shipment.workspaces for c in candidates)
    with pytest.raises(BadInputError, match="--fan-out must be between 1 and 64"):
        agent_fan_out(shipment.request, 0)
    bad = json.dumps({"kind": "agent-task", "task": "x", "agent": ["/bin/true"]})
    with pytest.raises(BadInputError, match=r"\$\.workspaces"):
        parse_batch_text(bad, base_dir=tmp_path, name="b.jsonl")


def test_recipe_items_ship_their_folder(tmp_path: Path) -> None:
    line = json.dumps(
        {"kind": "recipe-run", "recipe": str(EXAMPLES / "recipes" / "plugin-probe.json"), "root": str(EXAMPLES)}
    )
    item = parse_batch_text(line, base_dir=tmp_path, name="b.jsonl")[0]
    assert item.request.recipe_rel == "recipes/plugin-probe.json"
    out = unpack(item.request.root_tar, tmp_path / "root")
    assert (out / "plugins-for-recipes" / "shortcode-demo").is_dir()
    outside = json.dumps(
        {"kind": "recipe-run", "recipe": str(EXAMPLES / "recipes" / "plugin-probe.json"), "root": str(PLUGIN)}
    )
    with pytest.raises(BadInputError, match="field 'root': the recipe"):
        parse_batch_text(outside, base_dir=tmp_path, name="b.jsonl")


def test_an_evaluate_patch_item_checks_its_bench_paths_before_anything_runs(tmp_path: Path) -> None:
    item = parse_batch_text(_line(bench=["/", "/shop/"], bench_count=2), base_dir=tmp_path, name="b.jsonl")[0]
    assert (item.request.args.bench, item.request.args.bench_count) == (["/", "/shop/"], 2)
    with pytest.raises(BadInputError, match=r"b.jsonl line 1, field 'bench': --bench: path='shop'"):
        parse_batch_text(_line(bench=["shop"]), base_dir=tmp_path, name="b.jsonl")
    with pytest.raises(BadInputError, match=r"field 'bench_count': --bench-count: count='0'"):
        parse_batch_text(_line(bench=["/"], bench_count=0), base_dir=tmp_path, name="b.jsonl")


def test_a_recipe_item_without_root_ships_the_files_its_recipe_names(tmp_path: Path) -> None:
    """plugin-probe.json mounts ../plugins-for-recipes/shortcode-demo: shipping only the recipe's own folder made
    the worker's copy invalid ("recipe is not valid"); the default root now holds everything the recipe names."""
    from codebox_tui.recipes.validate import validate_recipe_file

    line = json.dumps({"kind": "recipe-run", "recipe": str(EXAMPLES / "recipes" / "plugin-probe.json")})
    item = parse_batch_text(line, base_dir=tmp_path, name="b.jsonl")[0]
    assert item.request.recipe_rel == "recipes/plugin-probe.json"
    out = unpack(item.request.root_tar, tmp_path / "root")
    shipped = validate_recipe_file(out / item.request.recipe_rel)
    assert shipped.valid, shipped.issues
    too_small = json.dumps(
        {
            "kind": "recipe-run",
            "recipe": str(EXAMPLES / "recipes" / "plugin-probe.json"),
            "root": str(EXAMPLES / "recipes"),
        }
    )
    with pytest.raises(BadInputError, match=r"field 'root': the recipe's \$\.inputs\.mounts\[0\]\.source"):
        parse_batch_text(too_small, base_dir=tmp_path, name="b.jsonl")


def test_pack_leaves_out_symlinks_and_excluded_names(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / ".git").mkdir(parents=True)
    (src / ".git" / "config").write_text("x")
    (src / "a.php").write_text("<?php")
    (src / "link.php").symlink_to("/etc/passwd")
    out = unpack(pack_dir(src, exclude=(".git",)), tmp_path / "out")
    assert sorted(p.name for p in out.rglob("*")) == ["a.php"]


def _tar(*members: tarfile.TarInfo, data: bytes = b"") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for member in members:
            tar.addfile(member, io.BytesIO(data) if member.isreg() else None)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "make",
    [
        lambda: tarfile.TarInfo("../escape.txt"),
        lambda: tarfile.TarInfo("/etc/evil"),
        lambda: _link("files/x", tarfile.SYMTYPE, "/etc/passwd"),
        lambda: _link("files/y", tarfile.LNKTYPE, "manifest.json"),
        lambda: _link("dev", tarfile.FIFOTYPE, ""),
    ],
)
def test_unpack_refuses_hostile_archives_whole(tmp_path: Path, make: object) -> None:
    good = tarfile.TarInfo("manifest.json")
    good.size = 2
    bad = make()  # type: ignore[operator]
    with pytest.raises(TransferError):
        unpack(_tar(good, bad, data=b"{}"), tmp_path / "dest")
    assert not (tmp_path / "dest").exists()
    assert not (tmp_path / "escape.txt").exists()


def _link(name: str, kind: bytes, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info


def test_unpack_never_replaces_a_folder_and_respects_the_size_limit(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep").write_text("mine")
    small = tarfile.TarInfo("a.txt")
    small.size = 10
    with pytest.raises(TransferError, match="already exists"):
        unpack(_tar(small, data=b"0123456789"), tmp_path / "taken")
    assert (tmp_path / "taken" / "keep").read_text() == "mine"
    with pytest.raises(TransferError, match="more than 5 bytes"):
        unpack(_tar(small, data=b"0123456789"), tmp_path / "big", limit=5)


def test_batch_records_group_items_and_promote_one_candidate(tmp_path: Path) -> None:
    with Store.open(tmp_path / "db.sqlite3") as store:
        create_batch(
            store,
            "batch-1",
            kind="fan-out",
            source="b.jsonl",
            items=[("a", "evaluate-patch", "A"), ("b", "evaluate-patch", "B")],
        )
        one = store.record_bundle(
            "artifact-bundle-sha256-" + "1" * 64,
            path=tmp_path / "r1",
            content_digest="1" * 64,
            run_id=None,
            changed_files=1,
        )
        update_item(store, "batch-1", "a", state="completed", attempts=2, verdict="improvement", bundle_key=one.key)
        update_item(store, "batch-1", "b", state="failed", attempts=1, error="boom")
        items = batch_items(store, "batch-1")
        assert [(i.item_id, i.state, i.attempts, i.bundle_key) for i in items] == [
            ("a", "completed", 2, one.key),
            ("b", "failed", 1, None),
        ]
        assert batch_of_bundles(store) == {one.key: ("batch-1", "a")}
        with pytest.raises(BadInputError, match="not a candidate"):
            promote(store, "batch-1", one.key + 100)
        promote(store, "batch-1", one.key)
        assert get_batch(store, "batch-1").promoted_key == one.key
        assert get_batch(store, "batch-1").kind == "fan-out"


def test_the_batch_backend_is_the_default_of_items_that_name_none(tmp_path: Path) -> None:
    """`codebox batch --backend native`: an evaluate-patch or agent-task item without `backend` gets it, one that
    names its own keeps it; a recipe item carries it for its worker, which uses it only when the recipe names no
    runtime.backend (batch/kinds.py); without --backend nothing is filled in (the worker's CODEBOX_BACKEND)."""
    agent = EXAMPLES / "agents" / "example_agent.py"
    lines = [
        _line(id="plain"),
        _line(id="own", backend="playground"),
        json.dumps(
            {
                "kind": "agent-task",
                "id": "agent",
                "task": 'replace "a" with "b"',
                "workspaces": [f"{PLUGIN}:/workspace/counter"],
                "agent": ["python3", str(agent)],
            }
        ),
        json.dumps(
            {
                "kind": "recipe-run",
                "id": "recipe",
                "recipe": str(EXAMPLES / "recipes" / "plugin-probe.json"),
                "root": str(EXAMPLES),
            }
        ),
    ]
    items = {i.id: i.request for i in parse_batch_text("\n".join(lines), base_dir=tmp_path, default_backend="native")}
    assert items["plain"].args.backend == "native" and items["own"].args.backend == "playground"
    assert items["agent"].request.backend == "native"
    assert items["recipe"].default_backend == "native"
    plain = {i.id: i.request for i in parse_batch_text("\n".join(lines), base_dir=tmp_path)}
    assert plain["plain"].args.backend is None and plain["agent"].request.backend is None
    assert plain["recipe"].default_backend is None
