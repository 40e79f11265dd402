"""Episode plans (``codebox/episode-plan/v1``) and the episode trace's rules that need no sandbox: every plan error
is named by its JSON path, the CLI refuses a bad plan with exit 2 before anything boots, the digests are the
reference's, and the trace verifier treats ``data``/``metadata`` as free and checks Codebox's own trace keys."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from codebox_tui.bundle.verify import episode_trace_issues
from codebox_tui.cli import app, main
from codebox_tui.contracts.canonical import domain_digest
from codebox_tui.contracts.episode import EpisodeAction, EpisodeObservation, EpisodeSnapshot, episode_digest
from codebox_tui.errors import BadInputError
from codebox_tui.lifecycle.episode import load_plan, plan_commands, plan_request

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "episode" / "plan.json"


def _write(tmp_path: Path, plan: Any) -> Path:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    return path


def _issues(tmp_path: Path, plan: Any) -> list[dict[str, str]]:
    with pytest.raises(BadInputError) as caught:
        load_plan(_write(tmp_path, plan))
    assert caught.value.code == "invalid-episode-plan"
    return list(caught.value.details["issues"])


def test_the_example_plan_is_valid_and_its_default_policy_allows_exactly_its_commands() -> None:
    plan = load_plan(EXAMPLE)
    assert [item.kind for item in plan.items] == [
        "action",
        "snapshot",
        "action",
        "observe",
        "restore",
        "action",
        "observe",
    ]
    assert plan_commands(plan) == ["wordpress.run-php"]
    request = plan_request(plan, EXAMPLE.parent)
    assert request.effective_policy().commands == ["wordpress.run-php"]
    assert request.mounts[0].source == str(REPO / "examples" / "site-state-plugin")  # relative to the plan
    assert request.mounts[0].mode == "readonly"


def test_every_plan_error_is_named_by_its_json_path(tmp_path: Path) -> None:
    issues = _issues(
        tmp_path,
        {
            "items": [
                {"action": {"command": "", "args": ["code=1"]}},
                {"snapshot": {}, "restore": {"snapshot": "x"}},
                {"observe": {"type": "files"}},
                {"observe": {"type": "http-response", "path": "no-slash"}},
                {"action": {"command": "wordpress.run-php"}, "colour": "blue"},
                {"observe": {"type": "weather"}},
            ]
        },
    )
    paths = {issue["path"]: issue["message"] for issue in issues}
    assert "$.items[0].action.command" in paths
    assert "exactly one of" in paths["$.items[1]"]
    assert "needs paths" in paths["$.items[2].observe"]
    assert "starting with '/'" in paths["$.items[3].observe"]
    assert "$.items[4].colour" in paths
    assert "$.items[5].observe.type" in paths


def test_a_plan_needs_items_and_an_unknown_command_is_refused_before_boot(tmp_path: Path) -> None:
    assert [i["path"] for i in _issues(tmp_path, {"items": []})] == ["$.items"]
    plan = load_plan(_write(tmp_path, {"items": [{"action": {"command": "wordpress.nope"}}]}))
    with pytest.raises(BadInputError) as caught:
        plan_request(plan, tmp_path)
    assert caught.value.field == "$.items[0].action"


def test_the_cli_refuses_a_bad_plan_with_exit_2_and_json_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, {"items": [{"observe": {"type": "files", "paths": ["relative"]}}]})
    with pytest.raises(SystemExit) as exited:
        main(["episode", "run", str(path), "--artifacts", str(tmp_path / "out"), "--json"])
    assert exited.value.code == 2
    failure = json.loads(capsys.readouterr().out)
    assert failure["error"]["code"] == "invalid-episode-plan"
    assert failure["error"]["details"]["issues"] == [
        {"path": "$.items[0].observe", "message": "paths: 'relative' must be an absolute sandbox path"}
    ]
    assert not (tmp_path / "out").exists()  # nothing booted
    schema = CliRunner().invoke(app, ["episode", "schema"])
    assert schema.exit_code == 0 and json.loads(schema.stdout)["$id"] == "codebox/episode-plan/v1"


def test_envelope_digests_are_the_reference_domain_digest() -> None:
    payload = EpisodeAction.digest_payload("command", "wordpress.run-php", ["code=1"], None, 5000, None)
    assert payload == {
        "schema": "wp-codebox/runtime-episode-action/v1",
        "kind": "command",
        "command": "wordpress.run-php",
        "args": ["code=1"],
        "timeoutMs": 5000,
    }
    assert episode_digest(payload).value == domain_digest("wp-codebox/runtime-episode-trace/v1", payload)


def _observation(id: str, data: Any) -> dict[str, Any]:
    payload = EpisodeObservation.digest_payload("runtime-info", data, "2026-01-01T00:00:00.000Z", [])
    return {**payload, "id": id, "digest": episode_digest(payload).model_dump()}


def _trace(**extra: Any) -> dict[str, Any]:
    observation = _observation("r:reset:0:observation:0", {"success": True, "reward": 1})  # data is free
    snapshot = EpisodeSnapshot.digest_payload(
        "s1", "2026-01-01T00:00:00.000Z", "runtime-state-artifact", {"benchmark": "free too"}, []
    )
    return {
        "schema": "wp-codebox/runtime-episode-trace/v1",
        "version": 1,
        "id": "e",
        "createdAt": "t",
        "runtime": {"id": "r"},
        "reset": {
            "id": "r:reset:0",
            "runtime": {"id": "r"},
            "observations": [observation],
            "observationRefs": [{"kind": "observation", "id": observation["id"], "digest": observation["digest"]}],
        },
        "steps": [],
        "snapshots": [{**snapshot, "digest": episode_digest(snapshot).model_dump()}],
        **extra,
    }


def test_data_and_metadata_are_free_but_codebox_trace_keys_are_checked() -> None:
    assert episode_trace_issues(_trace()) == []
    good = _trace(
        observations=[_observation("e:observation:1", {"x": 1})],
        restores=[
            {
                "id": "e:restore:0",
                "snapshotId": "s1",
                "restoredAt": "t",
                "afterStep": 0,
                "snapshotRef": {"kind": "snapshot", "id": "s1", "digest": _trace()["snapshots"][0]["digest"]},
            }
        ],
    )
    assert episode_trace_issues(good) == []
    edited = json.loads(json.dumps(good))
    edited["observations"][0]["data"]["x"] = 2
    edited["restores"][0]["snapshotRef"]["digest"]["value"] = "0" * 64
    issues = episode_trace_issues(edited)
    assert "observations[0].digest does not match the canonical observation payload" in issues
    assert "restores[0].snapshotRef.digest does not match the referenced envelope's digest" in issues
    graded = _trace(grader="x")
    graded["reset"]["observations"][0]["score"] = 1  # not a forbidden key: only the reference's list is refused
    assert episode_trace_issues(graded) == ["trace.grader is evaluation vocabulary, not allowed in a trace"]


def test_changed_paths_lists_files_and_links_outside_the_mounts_never_bare_folders() -> None:
    from codebox_tui.runtime.content_listing import changed_paths, skipped_paths
    from codebox_tui.runtime.mounts import parse_mount

    before = {
        "plugins": ("d", 0, 0),
        "plugins/a.php": ("f", 10, 100),
        "uploads/old.txt": ("f", 3, 100),
        "themes/t/style.css": ("f", 5, 100),
    }
    after = {
        "plugins": ("d", 0, 0),
        "plugins/a.php": ("f", 10, 200),
        "fonts": ("d", 0, 0),
        "mu-plugins/x.php": ("f", 7, 300),
        "themes/t/style.css": ("f", 5, 100),
        "uploads/old.txt": ("l", 0, 0),
    }
    assert changed_paths(before, after) == [
        {"path": "/wordpress/wp-content/mu-plugins/x.php", "status": "added", "type": "file", "bytes": 7},
        {"path": "/wordpress/wp-content/plugins/a.php", "status": "changed", "type": "file", "bytes": 10},
        {"path": "/wordpress/wp-content/uploads/old.txt", "status": "changed", "type": "link"},
    ]
    assert changed_paths(after, before)[0] == {
        "path": "/wordpress/wp-content/mu-plugins/x.php",
        "status": "deleted",
        "type": "file",
    }
    mounts = [parse_mount("/tmp:/wordpress/wp-content/plugins/mine:readonly", 0), parse_mount("/tmp:/srv/elsewhere", 1)]
    assert skipped_paths(mounts) == ["database", "plugins/mine"]


def test_the_live_run_tail_shows_an_episode_step_as_it_happens() -> None:
    from widgets.event_tail import format_event

    line = json.dumps(
        {
            "id": "event-1",
            "type": "episode.step",
            "timestamp": "2026-01-01T00:00:01.000Z",
            "level": "info",
            "data": {
                "episodeId": "e",
                "index": 0,
                "command": "wordpress.run-php",
                "exitCode": 0,
                "message": "step 0 done, observed files",
            },
        }
    )
    level, kind, text = format_event(line)
    assert (level, kind) == ("info", "episode.step")
    assert "command=wordpress.run-php" in text and "message=step 0 done, observed files" in text


def test_restore_needs_a_snapshot_document_inside_a_bundle(tmp_path: Path) -> None:
    from codebox_tui.lifecycle.episode import load_snapshot_document

    stray = tmp_path / "files" / "elsewhere" / "runtime-snapshot-x.json"
    stray.parent.mkdir(parents=True)
    stray.write_text("{}", encoding="utf-8")
    for path, code in ((tmp_path / "missing.json", "snapshot-missing"), (stray, "snapshot-missing")):
        with pytest.raises(BadInputError) as caught:
            load_snapshot_document(path)
        assert caught.value.code == code and caught.value.field == "--restore"
    bad = tmp_path / "files" / "runtime-snapshots" / "runtime-snapshot-x.json"
    bad.parent.mkdir(parents=True)
    bad.write_text('{"schema": "wp-codebox/wordpress-runtime-snapshot/v1"}', encoding="utf-8")
    with pytest.raises(BadInputError) as caught:
        load_snapshot_document(bad)
    assert caught.value.code == "invalid-snapshot"
