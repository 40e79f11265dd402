"""Every example recipe runs end to end through `codebox recipe-run` (real sandboxes, real Chromium). The example
recipes, the probes, staged files, declared artifacts, seeds, verdicts and cancelling run on the native backend
(real PHP in bubblewrap, real SQLite, real Chromium through the native preview): their subject is Codebox's own
handling, and each run checks the backend its bundle records. Runtime blueprint steps are Playground's (the native
backend refuses blueprints) and run there, on the session's warm sidecar. `plugin-probe` runs in a `codebox`
process of its own, as a user starts it; the other runs, the dry runs and `artifacts verify` go through the same
entry point (`codebox_tui.cli.main`) in the test's process (tests/factories/holds.py): a new process costs over a
CPU-second of imports and proves nothing more about a recipe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.factories.holds import codebox_in_process
from tests.factories.native import recorded_backend

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "recipes"
NATIVE = ("--backend", "native")


def _run(
    recipe: Path, artifacts: Path, home: Path, *extra: str, in_process: bool = True
) -> tuple[int, dict[str, Any], str]:
    """``codebox recipe-run RECIPE --json EXTRA`` through the entry point in this process (not ``in_process``: in a
    process of its own); a run's bundle must record the backend asked for (native, else Playground)."""
    args = ["recipe-run", str(recipe), "--artifacts-dir", str(artifacts), "--json", *extra]
    if in_process:
        proc = codebox_in_process(home, *args)
    else:
        proc = subprocess.run(
            [sys.executable, "-m", "codebox_tui", *args],
            capture_output=True,
            text=True,
            timeout=900,
            env={**os.environ, "CODEBOX_HOME": str(home)},
        )
    doc = json.loads(proc.stdout)
    if doc.get("runDir"):
        expected = "native" if NATIVE[1] in extra else "wordpress-playground"
        assert recorded_backend(Path(doc["runDir"])) == expected, doc["runDir"]
    return proc.returncode, doc, proc.stderr


def _stdout_of(run_dir: Path, index: int) -> str:
    rows = [json.loads(line) for line in (run_dir / "commands.jsonl").read_text().splitlines() if line]
    return str(rows[index].get("stdout", ""))


@pytest.fixture(scope="module")
def home(codebox_home: Path) -> Path:
    """The session's home (its WordPress builds already made); nothing boots for it."""
    return codebox_home


def test_examples_all_validate_and_dry_run(tmp_path: Path, home: Path) -> None:
    for recipe in sorted(EXAMPLES.glob("*.json")):
        code, doc, err = _run(recipe, tmp_path / "a", home, "--dry-run")
        assert code == 0, (recipe, doc, err)
        assert doc["plan"]["workflow"]["steps"]
    assert not (tmp_path / "a").exists()


@pytest.mark.native
def test_plugin_probe(tmp_path: Path, home: Path) -> None:
    code, doc, err = _run(EXAMPLES / "plugin-probe.json", tmp_path, home, *NATIVE, in_process=False)
    assert code == 0, err
    run_dir = Path(doc["runDir"])
    assert "Hello, recipe!" in _stdout_of(run_dir, 1)
    attestation = json.loads((run_dir / "files/run-attestation.json").read_text())
    assert attestation["schema"] == "wp-codebox/run-attestation/v1" and len(attestation["policy"]["hash"]) == 64
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert any(f["path"] == "files/run-attestation.json" for f in manifest["files"])
    # artifacts.verify (on by default): the verification of the bundle as first sealed is evidence in the
    # final bundle, which was sealed again with it listed (so its id differs) and verifies too
    verification = json.loads((run_dir / "files/runtime-evidence/artifact-bundle-verification.json").read_text())
    assert verification["schema"] == "wp-codebox/artifact-bundle-verification/v1"
    assert verification["valid"] is True and verification["violations"] == []
    assert verification["verifiedBundleId"].startswith("artifact-bundle-sha256-")
    assert verification["verifiedBundleId"] != manifest["id"] == doc["bundleId"]
    assert any(f["path"] == "files/runtime-evidence/artifact-bundle-verification.json" for f in manifest["files"])
    check = codebox_in_process(home, "artifacts", "verify", str(run_dir), "--json")
    assert check.returncode == 0 and json.loads(check.stdout)["valid"] is True, check.stdout + check.stderr


@pytest.mark.native
def test_artifacts_verify_false_adds_no_verification_evidence(tmp_path: Path, home: Path) -> None:
    recipe = json.loads((EXAMPLES / "plugin-probe.json").read_text())
    recipe["artifacts"] = {**recipe.get("artifacts", {}), "verify": False}
    for mount in recipe["inputs"]["mounts"]:  # the sources stay those of the example
        mount["source"] = str((EXAMPLES / mount["source"]).resolve())
    path = tmp_path / "no-verify.json"
    path.write_text(json.dumps(recipe))
    code, doc, err = _run(path, tmp_path / "a", home, *NATIVE)
    assert code == 0, err
    assert not (Path(doc["runDir"]) / "files/runtime-evidence").exists()


@pytest.mark.native
def test_seeded_site(tmp_path: Path, home: Path) -> None:
    code, doc, err = _run(EXAMPLES / "seeded-site.json", tmp_path, home, *NATIVE)
    assert code == 0, err
    result = json.loads(_stdout_of(Path(doc["runDir"]), 0).strip().splitlines()[-1])
    assert result["blogname"] == "Seeded Site"
    assert result["admin_email"] != "owner@private.example"  # not in the options allow-list
    assert int(result["pages"]) >= 1 and result["news"] is True
    assert result["editor"] == "seed-user-1"  # anonymised
    seed_phase = next(p for p in doc["phaseEvidence"] if p["name"] == "site_seed:content")
    assert seed_phase["data"]["counts"]["posts"] == {"included": 1, "excluded": 1}


@pytest.mark.native
def test_plugin_scaffold_mutation_is_in_the_bundle(tmp_path: Path, home: Path) -> None:
    code, doc, err = _run(EXAMPLES / "plugin-scaffold-mutation.json", tmp_path, home, *NATIVE)
    assert code == 0, err
    patch = (Path(doc["bundleDir"]) / "files/patch.diff").read_text()
    assert "feature.php" in patch and "function scratch_feature" in patch


@pytest.mark.native
def test_phpunit_run(tmp_path: Path, home: Path) -> None:
    code, doc, err = _run(EXAMPLES / "phpunit-run.json", tmp_path, home, *NATIVE)
    assert code == 0, err
    results = json.loads((Path(doc["bundleDir"]) / "files/test-results.json").read_text())
    assert results["status"] == "passed" and results["summary"]["passed"] == 7


@pytest.mark.native
@pytest.mark.chromium
def test_browser_shortcode(tmp_path: Path, home: Path) -> None:
    code, doc, err = _run(EXAMPLES / "browser-shortcode.json", tmp_path, home, *NATIVE)
    assert code == 0, (doc, err)
    run_dir = Path(doc["runDir"])
    assert "Hello, Recipe!" in (run_dir / "files/browser/snapshot.html").read_text()
    assert (run_dir / "files/browser/2/screenshot-greeting.png").is_file()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert any(f["path"] == "files/browser/screenshot.png" for f in manifest["files"])


@pytest.mark.native
def test_bug_reproduction_records_the_failing_expectation(tmp_path: Path, home: Path) -> None:
    code, doc, err = _run(EXAMPLES / "bug-reproduction.json", tmp_path, home, *NATIVE)
    assert code == 0, err  # the expectation is advisory: the run documents the bug
    run_dir = Path(doc["runDir"])
    assert _stdout_of(run_dir, 1).strip().endswith("3")
    assert len(doc["advisoryFailures"]) == 1
    summary = json.loads((run_dir / "files/browser/summary.json").read_text())
    assert summary["firstFailureIndex"] == 1 and "'3'" in summary["failure"]


@pytest.mark.native
def test_recipe_runtime_env_reaches_php(tmp_path: Path, home: Path) -> None:
    recipe = tmp_path / "env-recipe.json"
    recipe.write_text(
        json.dumps(
            {
                "schema": "wp-codebox/workspace-recipe/v1",
                "metadata": {"title": "runtimeEnv reaches getenv()"},
                "inputs": {"runtimeEnv": {"CODEBOX_RECIPE_MODE": "from-the-recipe"}},
                "workflow": {
                    "steps": [
                        {"command": "wordpress.run-php", "args": ["code=echo 'mode=', getenv('CODEBOX_RECIPE_MODE');"]}
                    ]
                },
            }
        )
    )
    code, doc, err = _run(recipe, tmp_path / "artifacts", home, *NATIVE)
    assert code == 0, (doc, err)
    run_dir = Path(doc["runDir"])
    assert _stdout_of(run_dir, 0) == "mode=from-the-recipe"
    metadata = json.loads((run_dir / "metadata.json").read_text())
    assert metadata["runtime"]["environment"]["runtimeEnv"] == {"CODEBOX_RECIPE_MODE": "from-the-recipe"}


@pytest.mark.native
def test_staged_files_and_probes(tmp_path: Path, home: Path) -> None:
    code, doc, err = _run(EXAMPLES / "staged-files-and-probes.json", tmp_path, home, *NATIVE)
    assert code == 0, (doc, err)
    run_dir = Path(doc["runDir"])
    assert _stdout_of(run_dir, 0).strip() == "Hello from a staged file"  # a staged file, read inside PHP
    assert {f["target"] for f in doc["stagedFiles"]} == {
        "/tmp/codebox-staged/greeting.txt",
        "/wordpress/wp-content/uploads/codebox-config/settings.json",
    }
    assert [(p["name"], p["status"]) for p in doc["probes"]] == [
        ("plugin-active", "passed"),
        ("shortcode-renders", "passed"),
    ]
    assert doc["probes"][0]["actualJson"] == {"active": True, "greeting": "Staged"}
    probes = json.loads((run_dir / "files/probes.json").read_text())
    assert probes["schema"] == "wp-codebox/recipe-probes/v1" and len(probes["probes"]) == 2
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert any(f["path"] == "files/probes.json" for f in manifest["files"])
    assert [p["name"] for p in doc["phaseEvidence"]][:2] == ["runtime_startup", "stage_files"]
    assert doc["phaseEvidence"][-1]["name"] == "run_probes"


@pytest.mark.native
def test_failing_probe_fails_the_run_unless_allowed(tmp_path: Path, home: Path) -> None:
    (tmp_path / "note.txt").write_text("staged-note")
    recipe = tmp_path / "probe-recipe.json"
    recipe.write_text(
        json.dumps(
            {
                "schema": "wp-codebox/workspace-recipe/v1",
                "inputs": {"stagedFiles": [{"source": "note.txt", "target": "/tmp/note.txt"}]},
                "workflow": {"steps": [{"command": "wordpress.run-php", "args": ["code=echo 1;"]}]},
                "probes": [
                    {
                        "name": "note",
                        "step": {
                            "command": "wordpress.run-php",
                            "args": ["code=echo json_encode(['note' => file_get_contents('/tmp/note.txt')]);"],
                        },
                        "expectJson": {"note": "something else"},
                    },
                    {
                        "name": "soft",
                        "allowFailure": True,
                        "step": {"command": "wordpress.run-php", "args": ["code=exit(3);"]},
                    },
                ],
            }
        )
    )
    code, doc, err = _run(recipe, tmp_path / "artifacts", home, *NATIVE)
    assert code != 0 and doc["success"] is False, err
    by_name = {p["name"]: p for p in doc["probes"]}
    assert by_name["note"]["status"] == "failed" and by_name["note"]["actualJson"] == {"note": "staged-note"}
    assert by_name["soft"]["status"] == "failed"
    assert [f.get("probe") for f in doc["stepFailures"]] == ["note"]  # the allowFailure probe does not fail the run
    attestation = json.loads((Path(doc["runDir"]) / "files/run-attestation.json").read_text())
    assert [p["name"] for p in attestation["probes"]] == ["note", "soft"]


@pytest.mark.playground
def test_runtime_blueprint_steps_are_applied(playground_session: Any, tmp_path: Path, home: Path) -> None:
    plugin = tmp_path / "bp-plugin"
    plugin.mkdir()
    (plugin / "bp-plugin.php").write_text(
        "<?php\n/**\n * Plugin Name: BP Plugin\n */\nfunction bp_plugin_hello() { return 'bp-hello'; }\n"
    )
    recipe = tmp_path / "bp-recipe.json"
    recipe.write_text(
        json.dumps(
            {
                "schema": "wp-codebox/workspace-recipe/v1",
                "runtime": {
                    "blueprint": {
                        "siteOptions": {"blogname": "Blueprint Site"},
                        "steps": [
                            {"step": "mkdir", "path": "/tmp/bp-dir"},
                            {"step": "writeFile", "path": "/tmp/bp-dir/note.txt", "data": "from-blueprint"},
                            {"step": "activatePlugin", "pluginPath": "bp-plugin/bp-plugin.php"},
                            {"step": "runPHP", "code": "<?php update_option('bp_marker', bp_plugin_hello());"},
                        ],
                    }
                },
                "inputs": {
                    "mounts": [
                        {"source": "bp-plugin", "target": "/wordpress/wp-content/plugins/bp-plugin", "mode": "readonly"}
                    ]
                },
                "workflow": {
                    "steps": [
                        {
                            "command": "wordpress.run-php",
                            "args": [
                                "code=echo json_encode([get_option('blogname'), file_get_contents('/tmp/bp-dir/note.txt'),"
                                " get_option('bp_marker'), in_array('bp-plugin/bp-plugin.php', get_option('active_plugins'))]);"
                            ],
                        }
                    ]
                },
            }
        )
    )
    code, doc, err = _run(recipe, tmp_path / "artifacts", home)
    assert code == 0, (doc, err)
    assert json.loads(_stdout_of(Path(doc["runDir"]), 0).strip().splitlines()[-1]) == [
        "Blueprint Site",
        "from-blueprint",
        "bp-hello",
        True,
    ]
    phase = next(p for p in doc["phaseEvidence"] if p["name"] == "run_blueprint_steps")
    assert [s["step"] for s in phase["data"]["steps"]] == [
        "setSiteOptions",
        "mkdir",
        "writeFile",
        "activatePlugin",
        "runPHP",
    ]
    # A step that fails stops the run before the workflow, with the step named.
    doc_bad = json.loads(recipe.read_text())
    doc_bad["runtime"]["blueprint"] = {"steps": [{"step": "activatePlugin", "pluginPath": "missing/missing.php"}]}
    recipe.write_text(json.dumps(doc_bad))
    code, doc, err = _run(recipe, tmp_path / "artifacts2", home)
    assert code != 0 and doc["executions"] == []
    assert "blueprint step 0 (activatePlugin) failed" in json.dumps(doc["stepFailures"])


@pytest.mark.native
def test_declared_artifacts_are_collected_into_the_bundle(tmp_path: Path, home: Path) -> None:
    recipe = tmp_path / "art-recipe.json"
    recipe.write_text(
        json.dumps(
            {
                "schema": "wp-codebox/workspace-recipe/v1",
                "workflow": {
                    "steps": [
                        {
                            "command": "wordpress.run-php",
                            "args": [
                                "code=file_put_contents('/tmp/report.json', json_encode(['ok' => true])); echo 'written';"
                            ],
                        }
                    ]
                },
                "artifacts": {
                    "paths": [
                        {"name": "report.json", "path": "/tmp/report.json", "required": True},
                        {"name": "optional-log", "path": "/tmp/absent.log"},
                    ]
                },
            }
        )
    )
    code, doc, err = _run(recipe, tmp_path / "artifacts", home, *NATIVE)
    assert code == 0, (doc, err)
    by_name = {a["name"]: a for a in doc["declaredArtifacts"]}
    assert by_name["report.json"]["status"] == "collected" and by_name["optional-log"]["status"] == "missing"
    bundle = Path(doc["bundleDir"])
    assert json.loads((bundle / "files/declared/report.json").read_text()) == {"ok": True}
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert any(f["path"] == "files/declared/report.json" for f in manifest["files"])
    doc_req = json.loads(recipe.read_text())
    doc_req["artifacts"]["paths"][1]["required"] = True
    recipe.write_text(json.dumps(doc_req))
    code, doc, err = _run(recipe, tmp_path / "artifacts2", home, *NATIVE)
    assert code != 0 and [f.get("artifact") for f in doc["stepFailures"]] == ["optional-log"]


@pytest.mark.native
def test_cancelled_recipe_runs_no_further_step_and_still_captures(tmp_path: Path, home: Path) -> None:
    import threading

    from codebox_tui.recipes.run import run_recipe
    from codebox_tui.recipes.validate import validate_recipe_file

    recipe = EXAMPLES / "plugin-scaffold-mutation.json"
    validation = validate_recipe_file(recipe)
    cancel = threading.Event()
    sessions: list[Any] = []

    def on_session(session: Any) -> None:
        sessions.append(session)
        cancel.set()  # the reviewer cancels while the sandbox boots

    outcome = run_recipe(
        validation, recipe.parent, artifacts_dir=tmp_path, on_session=on_session, cancel=cancel, backend="native"
    )
    assert len(sessions) == 1 and outcome["runtimeId"] == sessions[0].runtime_id
    assert outcome["success"] is False and outcome["executions"] == []
    assert outcome["stepFailures"][0]["error"]["code"] == "cancelled"
    bundle = Path(outcome["bundleDir"])
    assert (bundle / "manifest.json").exists() and recorded_backend(bundle) == "native"
    assert "feature.php" not in (bundle / "files" / "patch.diff").read_text()  # the step never ran
