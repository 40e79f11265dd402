"""Every flow honours the backend (docs/backends.md): recipe-run, episode run and agent-task boot a native
sandbox through the real `codebox` CLI when asked (``--backend native``, or ``CODEBOX_BACKEND``), at the host's
PHP when none is named; an explicit other PHP is refused before anything boots, naming ``--backend playground``.
An agent task that names no backend runs natively from ``CODEBOX_BACKEND``, its workspace tools in the native
sandbox shell: tests/e2e/test_mcp.py's ``agent_task`` (the server's setting; the task's backend is resolved by
run_agent_task for every caller), and `codebox agent-task --backend native` in a process of its own is
tests/e2e/test_agent_task.py's secret test. The example episode plan with its page observation, natively from
``CODEBOX_BACKEND``, is tests/e2e/test_mcp_flows.py's ``episode_run``."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.factories.holds import codebox_in_process
from tests.factories.native import codebox_with_tmpdir, host_php_version
from tests.factories.paths import REPO

pytestmark = pytest.mark.native

RECIPES = REPO / "examples" / "recipes"


def _runtime(bundle_dir: str) -> dict[str, object]:
    metadata = json.loads((Path(bundle_dir) / "metadata.json").read_text())
    return {"backend": metadata["runtime"]["backend"], "php": metadata["runtime"]["environment"]["phpVersion"]}


def test_recipe_run_boots_native_at_the_host_php(tmp_path: Path) -> None:
    out = codebox_with_tmpdir(
        tmp_path,
        "recipe-run",
        str(RECIPES / "plugin-probe.json"),
        "--backend",
        "native",
        "--artifacts",
        str(tmp_path / "artifacts"),
        "--json",
        "-q",
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["success"] is True and doc["status"] == "passed"
    assert _runtime(doc["bundleDir"]) == {"backend": "native", "php": host_php_version()}
    attestation = json.loads((Path(doc["bundleDir"]) / "files" / "run-attestation.json").read_text())
    assert attestation["versions"]["php"] == host_php_version().rsplit(".", 1)[0]  # the PHP the run got, not 8.3


def test_a_recipe_names_its_backend_and_the_command_line_overrides_it(tmp_path: Path, codebox_home: Path) -> None:
    """Plans only (``--dry-run``, nothing boots): through the real entry point in this process (docs/performance.md
    "Test suite"); the recipe runs in `codebox` processes of their own are the other tests'."""
    recipe = json.loads((RECIPES / "plugin-probe.json").read_text())
    recipe["runtime"] = {**recipe.get("runtime", {}), "backend": "native"}
    file = RECIPES / f"native-{os.getpid()}.json"  # beside the example, so its relative sources resolve
    file.write_text(json.dumps(recipe))
    try:
        plan = codebox_in_process(codebox_home, "recipe-run", str(file), "--dry-run", "--json")
        assert json.loads(plan.stdout)["plan"]["runtime"]["backend"] == "native", plan.stderr
        overridden = codebox_in_process(
            codebox_home, "recipe-run", str(file), "--dry-run", "--json", "--backend", "playground"
        )
        runtime = json.loads(overridden.stdout)["plan"]["runtime"]
        assert runtime["backend"] == "wordpress-playground" and runtime["phpVersion"] == "8.3"
    finally:
        file.unlink()


def test_an_explicit_other_php_on_native_is_refused_before_boot(tmp_path: Path) -> None:
    recipe = json.loads((RECIPES / "plugin-probe.json").read_text())
    recipe["runtime"] = {**recipe.get("runtime", {}), "phpVersion": "8.3"}
    file = RECIPES / f"native-php-{os.getpid()}.json"
    file.write_text(json.dumps(recipe))
    try:
        out = codebox_with_tmpdir(tmp_path, "recipe-run", str(file), "--json", "-q", env={"CODEBOX_BACKEND": "native"})
    finally:
        file.unlink()
    assert out.returncode == 2, out.stderr
    assert "--backend playground" in out.stdout + out.stderr
    assert not (tmp_path / "artifacts").exists()


def test_an_episode_runs_natively_from_the_setting(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "schema": "codebox/episode-plan/v1",
                "items": [
                    {
                        "action": {
                            "command": "wordpress.run-php",
                            "args": ["code=update_option('blogname', 'Native episode');"],
                        }
                    },
                    {
                        "action": {
                            "command": "wordpress.run-php",
                            "args": ["code=echo get_option('blogname'), PHP_VERSION;"],
                        },
                        "observe": {"type": "command-result"},
                    },
                ],
            }
        )
    )
    out = codebox_with_tmpdir(
        tmp_path,
        "episode",
        "run",
        str(plan),
        "--artifacts",
        str(tmp_path / "artifacts"),
        "--json",
        "-q",
        env={"CODEBOX_BACKEND": "native"},
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["status"] == "completed" and doc["runtime"]["backend"] == "native"
    trace = json.loads((Path(doc["artifacts"]["directory"]) / "files" / "runtime-episode-trace.json").read_text())
    assert trace["steps"][1]["execution"]["stdout"] == "Native episode" + host_php_version()


def test_batch_backend_runs_an_item_that_names_none_natively(tmp_path: Path) -> None:
    """`codebox batch --backend native` on a real private Ray: the plugin-probe recipe (no runtime.backend of its
    own) runs on the native backend, at the host's PHP, and its bundle comes back verified."""
    batch = tmp_path / "batch.jsonl"
    batch.write_text(
        json.dumps(
            {
                "kind": "recipe-run",
                "id": "probe",
                "recipe": str(RECIPES / "plugin-probe.json"),
                "root": str(REPO / "examples"),
            }
        )
        + "\n"
    )
    short = tempfile.mkdtemp(prefix="cbx-", dir="/tmp")  # Ray's socket paths must stay under 108 bytes
    try:
        out = codebox_with_tmpdir(
            tmp_path,
            "batch",
            str(batch),
            "--backend",
            "native",
            "--artifacts",
            str(tmp_path / "artifacts"),
            "--json",
            "-q",
            env={"TMPDIR": short},
        )
    finally:
        shutil.rmtree(short, ignore_errors=True)
    assert out.returncode == 0, out.stdout + out.stderr
    doc = json.loads(out.stdout)
    [item] = doc["items"]
    assert item["state"] == "completed", item
    bundles = [p.parent for p in (tmp_path / "artifacts").rglob("manifest.json")]
    assert len(bundles) == 1
    assert _runtime(str(bundles[0])) == {"backend": "native", "php": host_php_version()}
