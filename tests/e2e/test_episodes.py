"""Runtime episodes end to end (docs/episodes.md): an episode of several steps with observations (a page
request and a Chromium screenshot among them) and a snapshot, verified by the bundle verifier; a trace edited
after the fact fails verification; a snapshot restored into a new sandbox gives an identical site; an
incompatible snapshot is refused before anything boots; files written outside the declared mounts are flagged;
an observation as a command step; the CLI's episode runs. Every sandbox is a native one (real PHP in real
bubblewrap, docs/backends.md): episodes, snapshots and their bundles are the host's work, the same on both
backends, and each test checks the backend its bundle records."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.bundle import layout
from codebox_tui.bundle.seal import append_and_reseal
from codebox_tui.bundle.verify import verify_bundle
from codebox_tui.contracts.episode import ActionSpec, ObservationSpec, SnapshotSpec
from codebox_tui.contracts.runtime import RuntimePolicy
from codebox_tui.contracts.site_state import snapshot_hashes
from codebox_tui.lifecycle import RunRequest
from codebox_tui.lifecycle.episode import Episode, load_snapshot_document
from codebox_tui.runtime import site_state
from codebox_tui.runtime.table_prefix import PrefixRename, rebase_snapshot_tables
from tests.factories.holds import codebox_in_process
from tests.factories.native import recorded_backend

pytestmark = pytest.mark.native

REPO = Path(__file__).resolve().parents[2]
COMMANDS = ["wordpress.run-php", "wordpress.browser-probe"]
MUTATE = (
    "code=update_option('blogname', 'Episode site'); "
    "wp_insert_post(['post_title' => 'Episode post', 'post_status' => 'publish']); "
    "file_put_contents(WP_CONTENT_DIR . '/episode.txt', 'from the episode'); "
    "echo json_encode(['success' => true, 'reward' => 1]);"
)  # a command's own keys are free (spec §10)
SECTIONS = ["summary", "options", "posts", "users", "terms"]


@dataclass
class EpisodeRun:
    bundle: Path
    snapshot_path: Path
    export: dict[str, Any]
    hashes: dict[str, str]
    outcome: Any


def _request(tmp: Path, **fields: Any) -> RunRequest:
    return RunRequest(
        policy=RuntimePolicy(commands=COMMANDS), artifacts_root=tmp, tool_commands=[], backend="native", **fields
    )


def _export(session: Any) -> dict[str, Any]:
    """The state export of the sandbox's site, its own preview address (each sandbox has its own port, which
    WordPress reports as home) written as <preview> and its own table prefix (in the `<prefix>user_roles`
    option's name) as <prefix>."""
    from codebox_tui.contracts.site_state import StateExportConfig

    export = site_state.export_wordpress_state(session.sandbox, StateExportConfig(sections=SECTIONS))  # type: ignore[arg-type]
    text = json.dumps({section.section: section.data for section in export.sections}, sort_keys=True)
    text = text.replace(session.sandbox.preview_url.rstrip("/"), "<preview>")
    return dict(json.loads(text.replace(session.sandbox.table_prefix, "<prefix>")))


@pytest.fixture(scope="module")
def episode_run(tmp_path_factory: pytest.TempPathFactory) -> EpisodeRun:
    tmp = tmp_path_factory.mktemp("episode")
    with Episode(_request(tmp)) as episode:
        reset = episode.reset()
        assert [o.type for o in reset.observations] == ["runtime-info", "mounts"]
        step = episode.step(
            ActionSpec(command="wordpress.run-php", args=[MUTATE], description="change the site"),
            ObservationSpec(type="wordpress-state", sections=SECTIONS),
        )  # type: ignore[arg-type]
        assert step.execution["exitCode"] == 0
        assert "json" not in step.execution["result"]  # the parsed output stays in stdout only
        saved = episode.snapshot(SnapshotSpec(name="changed"))
        export = _export(episode.session)
        snapshot = episode._saved[saved.id]
        # change it again, look at it in several ways, then go back to the snapshot
        episode.step(
            ActionSpec(
                command="wordpress.run-php",
                args=["code=update_option('blogname', 'Changed again'); echo get_option('blogname');"],
            ),
            ObservationSpec(type="command-result"),
        )
        files = episode.observe(
            ObservationSpec(
                type="files", paths=["/wordpress/wp-content/episode.txt", "/wordpress/wp-content", "/no/such/file"]
            )
        )
        by_path = {f["path"]: f for f in files.data["files"]}
        assert by_path["/wordpress/wp-content/episode.txt"]["bytes"] == len("from the episode")
        assert "episode.txt" in by_path["/wordpress/wp-content"]["entries"]
        assert by_path["/no/such/file"]["type"] == "missing"
        page = episode.observe(ObservationSpec(type="http-response", path="/"))
        assert page.data["status"] == 200 and "Changed again" in page.data["body"]["text"]
        events = episode.observe(ObservationSpec(type="runtime-events", limit=50))
        assert "episode.snapshot" in [e["type"] for e in events.data["events"]]
        logs = episode.observe(ObservationSpec(type="runtime-logs", maxBytes=4096))
        assert "Changed again" in logs.data["commands"]["tail"]
        browser = episode.observe(ObservationSpec(type="browser-result", args=["url=/"]))
        assert browser.data["execution"]["exitCode"] == 0, browser.data
        assert any(ref.path and ref.path.endswith(".png") for ref in browser.artifactRefs)
        episode.restore("changed")
        after = episode.step(ActionSpec(command="wordpress.run-php", args=["code=echo get_option('blogname');"]))
        assert after.execution["stdout"] == "Episode site"
    assert episode.outcome is not None and episode.outcome.status == "completed", episode.outcome.failure_text()
    bundle = episode.outcome.bundle_dir
    assert bundle is not None and recorded_backend(bundle) == "native"
    return EpisodeRun(
        bundle=bundle,
        snapshot_path=bundle / layout.runtime_snapshot_path(saved.id),
        export=export,
        hashes=snapshot.hashes.model_dump(),
        outcome=episode.outcome,
    )


def _load(bundle: Path, rel: str) -> Any:
    return json.loads((bundle / rel).read_text(encoding="utf-8"))


def test_an_episode_bundle_carries_the_trace_and_verifies(episode_run: EpisodeRun) -> None:
    bundle = episode_run.bundle
    result = verify_bundle(bundle)
    assert result.valid, [v.message for v in result.violations]
    kinds = {f["path"]: f["kind"] for f in _load(bundle, layout.MANIFEST)["files"]}
    assert kinds[layout.EPISODE_TRACE] == "runtime-episode-trace"
    assert kinds[layout.EPISODE_EVENTS] == "runtime-episode-events"
    assert kinds[episode_run.snapshot_path.relative_to(bundle).as_posix()] == "runtime-snapshot"
    assert sum(kind == "wordpress-state-section" for kind in kinds.values()) == len(SECTIONS)

    trace = _load(bundle, layout.EPISODE_TRACE)
    assert [s["index"] for s in trace["steps"]] == [0, 1, 2]
    assert len(trace["snapshots"]) == 1 and trace["snapshots"][0]["semantics"] == "runtime-state-artifact"
    assert [o["type"] for o in trace["observations"]] == [
        "files",
        "http-response",
        "runtime-events",
        "runtime-logs",
        "browser-result",
    ]
    assert trace["restores"][0]["snapshotRef"]["id"] == trace["snapshots"][0]["id"]
    records = [json.loads(line)["type"] for line in (bundle / layout.EPISODE_EVENTS).read_text().splitlines()]
    assert records[0] == "episode.reset" and records[-1] == "episode.artifacts" and "episode.restore" in records

    reference = _load(bundle, layout.REFERENCE_MANIFEST)
    assert reference["trace"]["path"] == layout.EPISODE_TRACE and reference["events"]["path"] == layout.EPISODE_EVENTS
    assert [s["id"] for s in reference["snapshots"]] == [trace["snapshots"][0]["id"]]
    replay = _load(bundle, layout.REPLAY_INDEX)
    assert replay["replay"]["status"] == "runtime-state-artifact"
    assert [a["index"] for a in replay["actions"]] == [0, 1, 2]
    assert replay["references"]["trace"]["path"] == layout.EPISODE_TRACE
    metadata = _load(bundle, layout.METADATA)
    assert metadata["artifacts"]["runtimeEpisodeTrace"] == layout.EPISODE_TRACE
    assert metadata["artifacts"]["runtimeSnapshots"] == [episode_run.snapshot_path.relative_to(bundle).as_posix()]
    assert _load(bundle, layout.REVIEW)["evidence"]["runtimeEpisodeTrace"] == layout.EPISODE_TRACE


@dataclass
class _Added:
    path: str
    kind: str
    contentType: str


def _tampered(episode_run: EpisodeRun, tmp_path: Path, edit: Any, rel: str = layout.EPISODE_TRACE) -> list[str]:
    """A copy of the bundle with ``rel`` edited and the manifest re-sealed over the edit (so only the document's own
    rules can catch it); returns the verifier's messages."""
    copy = tmp_path / "bundle"
    shutil.copytree(episode_run.bundle, copy)
    doc = _load(copy, rel)
    edit(doc)
    (copy / rel).write_text(json.dumps(doc, indent=2), encoding="utf-8")
    append_and_reseal(copy, [_Added(rel, "ignored", "application/json")])
    result = verify_bundle(copy)
    assert not result.valid
    return [v.message for v in result.violations]


def test_a_trace_edited_after_the_run_fails_verification(episode_run: EpisodeRun, tmp_path: Path) -> None:
    def change_an_action(doc: dict[str, Any]) -> None:
        doc["steps"][1]["action"]["args"] = ["code=echo 'something else';"]

    messages = _tampered(episode_run, tmp_path, change_an_action)
    assert any("steps[1].action.digest does not match" in m for m in messages), messages


def test_a_trace_with_evaluation_vocabulary_or_a_moved_step_fails(episode_run: EpisodeRun, tmp_path: Path) -> None:
    def grade_and_reorder(doc: dict[str, Any]) -> None:
        doc["reward"] = 1
        doc["steps"][0], doc["steps"][1] = doc["steps"][1], doc["steps"][0]

    messages = " ".join(_tampered(episode_run, tmp_path, grade_and_reorder))
    assert "trace.reward is evaluation vocabulary" in messages
    assert "steps[0].index must equal its position 0" in messages


def test_an_edited_snapshot_document_fails_verification(episode_run: EpisodeRun, tmp_path: Path) -> None:
    rel = episode_run.snapshot_path.relative_to(episode_run.bundle).as_posix()

    def change_a_row(doc: dict[str, Any]) -> None:
        options = next(t for t in doc["database"]["tables"] if t["name"].endswith("options"))
        options["rows"][0]["option_value"] = "planted"

    messages = _tampered(episode_run, tmp_path, change_a_row, rel)
    assert any("do not match its hashes" in m for m in messages), messages


def test_a_snapshot_restored_into_a_new_sandbox_gives_the_same_site(episode_run: EpisodeRun, tmp_path: Path) -> None:
    snapshot = load_snapshot_document(episode_run.snapshot_path)
    request = _request(tmp_path, restore=snapshot, restore_source=str(episode_run.snapshot_path))
    with Episode(request, resettable=False) as episode:
        reset = episode.reset([])
        assert reset.restoredSnapshot == snapshot.id
        again = site_state.take_snapshot(episode.run.sandbox, episode._scope([]))
        export = _export(episode.session)
        probe = episode.step(
            ActionSpec(
                command="wordpress.run-php",
                args=["code=echo get_option('blogname'), '|', file_get_contents(WP_CONTENT_DIR . '/episode.txt');"],
            )
        )
    # the new native sandbox has its own table prefix: moved back to the snapshot's, its tables hash the same
    assert again.metadata["tablePrefix"] != snapshot.metadata["tablePrefix"]
    payload = again.model_dump(mode="json", by_alias=True, exclude_none=True)
    back = rebase_snapshot_tables(
        payload, PrefixRename(again.metadata["tablePrefix"], snapshot.metadata["tablePrefix"])
    )
    assert snapshot_hashes(back["database"], back["files"]) == episode_run.hashes
    assert export == episode_run.export
    assert probe.execution["stdout"] == "Episode site|from the episode"
    assert episode.outcome is not None and episode.outcome.status == "completed"
    assert episode.outcome.timings.get("restoreSeconds", 0) > 0
    assert verify_bundle(episode.outcome.bundle_dir).valid  # type: ignore[arg-type]
    assert recorded_backend(episode.outcome.bundle_dir) == "native"  # type: ignore[arg-type]


def _codebox(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codebox_tui", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=600,
        check=False,
    )


def test_run_restore_refuses_another_php_version_before_booting(
    episode_run: EpisodeRun, tmp_path: Path, codebox_home: Path
) -> None:
    """Through the real entry point in this process (docs/performance.md "Test suite"); `codebox run --restore`
    in a process of its own is test_run_restore_through_the_cli's."""
    taken_on = _load(episode_run.bundle, episode_run.snapshot_path.relative_to(episode_run.bundle).as_posix())[
        "compatibility"
    ]["phpVersion"]
    php = ".".join(taken_on.split(".")[:2])  # the series: a native snapshot records the host's full version
    other = "8.2" if php != "8.2" else "8.3"
    done = codebox_in_process(
        codebox_home,
        "run",
        "--restore",
        str(episode_run.snapshot_path),
        "--php",
        other,
        "--artifacts",
        str(tmp_path),
        "-c",
        "wordpress.run-php",
        "-a",
        "code=echo 1;",
        "--json",
    )
    assert done.returncode == 2, done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "snapshot-incompatible" and error["field"] == "compatibility.phpVersion"
    assert f"PHP {php}" in error["message"] and f"--php {php}" in error["message"]
    assert not any(tmp_path.iterdir())  # nothing booted, no run folder


def test_run_restore_through_the_cli(episode_run: EpisodeRun, tmp_path: Path) -> None:
    done = _codebox(
        "run",
        "--backend",
        "native",
        "--restore",
        str(episode_run.snapshot_path),
        "--artifacts",
        str(tmp_path),
        "-c",
        "wordpress.run-php",
        "-a",
        "code=echo get_option('blogname');",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)
    assert recorded_backend(Path(output["artifacts"]["directory"])) == "native"
    assert output["execution"]["stdout"] == "Episode site"
    assert output["timings"]["restoreSeconds"] > 0


def test_files_written_outside_the_declared_mounts_are_flagged(tmp_path: Path) -> None:
    from codebox_tui.lifecycle import CommandStep, RunService, mounts_from_text

    plugin = tmp_path / "mine"
    plugin.mkdir()
    (plugin / "mine.php").write_text("<?php // mine\n", encoding="utf-8")
    code = (
        "code=file_put_contents(WP_CONTENT_DIR . '/plugins/mine/mine.php', '<?php // changed in the mount');"
        "file_put_contents(WP_CONTENT_DIR . '/mu-plugins/planted.php', '<?php // planted');"
        "wp_mkdir_p(WP_CONTENT_DIR . '/uploads/2026'); file_put_contents(WP_CONTENT_DIR . '/uploads/2026/a.txt', 'a');"
    )
    request = RunRequest(
        mounts=mounts_from_text([f"{plugin}:/wordpress/wp-content/plugins/mine"]),
        commands=[CommandStep("wordpress.run-php", [code])],
        policy=RuntimePolicy(commands=["wordpress.run-php"]),
        artifacts_root=tmp_path / "out",
        backend="native",
    )
    outcome = RunService().run(request)
    assert outcome.status == "completed", outcome.failure_text()
    bundle = outcome.bundle_dir
    assert bundle is not None and recorded_backend(bundle) == "native"
    diff = _load(bundle, layout.SITE_STATE_DIFF)
    assert diff["filesOutsideMounts"] == [
        {"path": "/wordpress/wp-content/mu-plugins/planted.php", "status": "added", "type": "file", "bytes": 16},
        {"path": "/wordpress/wp-content/uploads/2026/a.txt", "status": "added", "type": "file", "bytes": 1},
    ]
    risk = next(r for r in diff["risks"] if r["code"] == "files-outside-mounts")
    assert risk["severity"] == "high" and risk["subject"] == "/wordpress/wp-content/mu-plugins/planted.php"
    assert "site-state:files-outside-mounts" in _load(bundle, layout.REVIEW)["riskFlags"]
    changed = [c["relativePath"] for c in _load(bundle, layout.CHANGED_FILES)["files"]]
    assert changed == ["mine.php"]  # the mount's own change is in the patch, not in the flag


def test_an_observation_as_a_command_step(tmp_path: Path, codebox_home: Path) -> None:
    """``wp-codebox.observe`` gives recipes and `codebox run` the episode observations as steps (through the real
    entry point in this process, docs/performance.md "Test suite")."""
    from codebox_tui.contracts.episode import EpisodeObservation

    done = codebox_in_process(
        codebox_home,
        "run",
        "--backend",
        "native",
        "--artifacts",
        str(tmp_path),
        "-c",
        "wp-codebox.observe",
        "-a",
        "type=wordpress-state",
        "-a",
        'spec-json={"sections": ["options"], "optionNames": ["blog*"]}',
        "--json",
    )
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)
    envelope = output["execution"]["result"]["json"]
    observation = EpisodeObservation.model_validate(envelope)
    payload = EpisodeObservation.digest_payload(
        observation.type, envelope["data"], observation.observedAt, envelope["artifactRefs"]
    )
    from codebox_tui.contracts.episode import episode_digest

    assert observation.digest == episode_digest(payload)
    bundle = Path(output["artifacts"]["directory"])
    section = observation.artifactRefs[0].path
    assert section is not None and section.endswith("-wordpress-state-options.json")
    assert "blogname" in json.dumps(_load(bundle, section))
    assert verify_bundle(bundle).valid
    assert recorded_backend(bundle) == "native"


def test_episode_run_cli_runs_the_example_plan(tmp_path: Path) -> None:
    done = _codebox(
        "episode",
        "run",
        str(REPO / "examples" / "episode" / "plan.json"),
        "--backend",
        "native",
        "--artifacts",
        str(tmp_path),
        "--json",
    )
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)
    assert output["schema"] == "codebox/episode-result/v1" and output["status"] == "completed"
    assert [(s["index"], s["exitCode"], s["observation"]) for s in output["steps"]] == [
        (0, 0, "wordpress-state"),
        (1, 0, "command-result"),
        (2, 0, "http-response"),
    ]
    assert len(output["snapshots"]) == 1
    bundle = Path(output["artifacts"]["directory"])
    assert recorded_backend(bundle) == "native"
    trace = _load(bundle, layout.EPISODE_TRACE)
    # the plan restored the snapshot taken before the demo plugin was activated
    assert trace["steps"][2]["execution"]["stdout"] == "[]"
    assert [o["type"] for o in trace["observations"]] == ["files", "runtime-events"]
    assert verify_bundle(bundle).valid
    assert "episode: snapshot named" in done.stderr  # the progress lines name each item as it happens


def test_episode_run_prints_each_step_counted_from_one_with_its_output(tmp_path: Path, codebox_home: Path) -> None:
    """Through the real entry point in this process (docs/performance.md "Test suite"); `codebox episode run` in a
    process of its own is test_episode_run_cli_runs_the_example_plan's."""
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "schema": "codebox/episode-plan/v1",
                "items": [
                    {"action": {"command": "wordpress.run-php", "args": ['code=echo "first line\\nsecond line\\n";']}}
                ],
            }
        )
    )
    done = codebox_in_process(
        codebox_home, "episode", "run", str(plan), "--backend", "native", "--artifacts", str(tmp_path / "art")
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    step = next(i for i, line in enumerate(lines) if line.startswith("  step "))
    assert lines[step] == "  step 1: wordpress.run-php exited 0"
    assert lines[step + 1 : step + 3] == ["    first line", "    second line"]
    assert "step 1/1: wordpress.run-php" in done.stderr or "step 1: wordpress.run-php" in done.stderr
