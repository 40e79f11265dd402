"""What a run's bundle says beyond the change (issue #30, point 7), through the real `codebox run` CLI on one
native sandbox: a PHP step edits the mounted plugin, sets and deletes options, adds an administrator and
activates the plugin. The `--json` document's `artifacts` names the manifest, changed-files and patch;
`blueprint.after.json` replays the site changes as blueprint steps (docs/site-state.md); `provenance.workspace`
says what was mounted, with the digest of the bytes the sandbox was given (docs/contracts.md)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.factories.held import codebox
from tests.factories.native import run_natively
from tests.factories.paths import EXAMPLE_PLUGIN

pytestmark = pytest.mark.native

TARGET = "/wordpress/wp-content/plugins/simple-plugin"
CHANGE_SITE = r"""
require_once ABSPATH . 'wp-admin/includes/plugin.php';
update_option('codebox_note', 'set by the run');
update_option('codebox_long', str_repeat('x', 500));
delete_option('blogdescription');
$id = wp_insert_user(['user_login' => 'run-admin', 'user_pass' => wp_generate_password(), 'role' => 'administrator']);
$r = activate_plugin('simple-plugin/simple-plugin.php');
file_put_contents(WP_PLUGIN_DIR . '/simple-plugin/note.txt', "written\n");
echo is_wp_error($r) ? $r->get_error_message() : 'changed';
"""


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("extras")
    plugin = root / "simple-plugin"
    shutil.copytree(EXAMPLE_PLUGIN, plugin)
    lines = "".join(
        f"{p.relative_to(plugin).as_posix()}\0{hashlib.sha256(p.read_bytes()).hexdigest()}\n"
        for p in sorted(plugin.rglob("*"))
        if p.is_file()
    )
    out = run_natively(
        *("--mount", f"{plugin}:{TARGET}", "-c", "wordpress.run-php", "-a", f"code={CHANGE_SITE}"),
        *("--artifacts", str(root / "artifacts"), "--json", "--quiet"),
    )
    doc = json.loads(out.stdout)
    assert doc["execution"]["stdout"].endswith("changed"), (doc["execution"], out.stderr)
    return {
        "doc": doc,
        "plugin": plugin,
        "digest": "sha256:" + hashlib.sha256(lines.encode()).hexdigest(),
        "bundle": Path(doc["artifacts"]["directory"]),
    }


def test_run_json_artifacts_name_the_manifest_changed_files_and_patch(ran: dict[str, Any]) -> None:
    artifacts, bundle = ran["doc"]["artifacts"], ran["bundle"]
    assert artifacts["manifest"] == str(bundle / "manifest.json")
    assert artifacts["changedFiles"] == str(bundle / "files" / "changed-files.json")
    assert artifacts["patch"] == str(bundle / "files" / "patch.diff")
    assert "note.txt" in Path(artifacts["patch"]).read_text()
    listed = {f["path"] for f in json.loads(Path(artifacts["manifest"]).read_text())["files"]}
    assert {"files/changed-files.json", "files/patch.diff"} <= listed
    verified = codebox(Path(os.environ["CODEBOX_HOME"]), "artifacts", "verify", str(bundle), timeout=120)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_blueprint_after_replays_what_the_site_state_diff_knows(ran: dict[str, Any]) -> None:
    bundle = ran["bundle"]
    kinds = {f["path"]: f["kind"] for f in json.loads((bundle / "manifest.json").read_text())["files"]}
    assert kinds["blueprint.after.json"] == "blueprint-after"
    assert kinds["blueprint.after-notes.json"] == "blueprint-after-notes"
    blueprint = json.loads((bundle / "blueprint.after.json").read_text())
    assert blueprint["$schema"] == "https://playground.wordpress.net/blueprint-schema.json"
    steps = blueprint["steps"]
    options = next(s["options"] for s in steps if s["step"] == "setSiteOptions")
    assert options["codebox_note"] == "set by the run" and "codebox_long" not in options
    assert {"step": "activatePlugin", "pluginPath": f"{TARGET}/simple-plugin.php"} in steps
    data = [
        json.loads(base64.b64decode(re.search(r"base64_decode\('([A-Za-z0-9+/=]*)'\)", s["code"]).group(1)))
        for s in steps
        if s["step"] == "runPHP"
    ]
    assert ["blogdescription"] in data
    assert [{"login": "run-admin", "capabilities": ["administrator"]}] in data
    notes = json.loads((bundle / "blueprint.after-notes.json").read_text())
    assert notes["replayStatus"] == "partial" and notes["steps"] == len(steps)
    assert any(line.startswith("option codebox_long: only the first") for line in notes["limitations"])


def test_provenance_workspace_says_what_was_mounted(ran: dict[str, Any]) -> None:
    metadata = json.loads((ran["bundle"] / "metadata.json").read_text())
    review = json.loads((ran["bundle"] / "files" / "review.json").read_text())
    mounts = metadata["provenance"]["workspace"]["mounts"]
    assert mounts == review["provenance"]["workspace"]["mounts"]
    assert len(mounts) == 1
    mount = mounts[0]
    assert (mount["source"], mount["target"], mount["mode"], mount["writeMode"]) == (
        str(ran["plugin"]),
        TARGET,
        "readwrite",
        "copy-on-write",
    )
    assert mount["files"] == 2 and mount["digest"] == ran["digest"]  # the bytes before the run, not after
