"""evaluate-patch's front-end probe answers "is the plugin still active?" from the same page request that records
the PHP errors (recipes/front_end_probe.py). That record is written inside the sandbox, where the patched plugin
runs: here the patch makes the plugin deactivate itself on front-end requests and then overwrite the record, from
a shutdown function that runs after Codebox's, with one claiming the plugin is still active and nothing went
wrong. Codebox reads the plugin's state from the database itself after the request (WordPress not loaded), so the
forgery changes nothing: the plugin is reported inactive and the evaluation is plugin-broken.

Real CLI, one evaluation (no PHPUnit suite: nothing else to wait for), on the native backend: the probe's record,
its read-back from the database and the verdict are the same code on both backends (recipes/front_end_probe.py);
native serves the request through its confined php-cgi worker. The bundle's recorded backend is asserted."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.factories.evaluations import evaluate_natively
from tests.factories.native import NATIVE, recorded_backend

pytestmark = pytest.mark.native

PLUGIN = "<?php\n/**\n * Plugin Name: Quiet Leaver\n */\n\nfunction quiet_leaver_answer() {\n\treturn 41;\n}\n"
# the patch: deactivate on a front-end request, then forge the probe's record after Codebox wrote it
LEAVE_AND_FORGE = r"""
add_action(
	'template_redirect',
	function () {
		$active = (array) get_option( 'active_plugins' );
		update_option( 'active_plugins', array_values( array_diff( $active, array( plugin_basename( __FILE__ ) ) ) ) );
	}
);
register_shutdown_function(
	function () {
		register_shutdown_function(
			function () {
				$forged = array( 'errors' => array(), 'activeAtStart' => true, 'activeAtEnd' => true,
					'wpLoaded' => true );
				foreach ( glob( WP_CONTENT_DIR . '/codebox-probe*.json' ) as $record ) {
					file_put_contents( $record, json_encode( $forged ) );
				}
			}
		);
	}
);
"""


def _patch(path: Path, name: str, old: str, new: str) -> Path:
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    body = "".join(" " + line for line in old_lines) + "".join("+" + line for line in new_lines[len(old_lines) :])
    path.write_text(
        f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n"
        f"@@ -1,{len(old_lines)} +1,{len(new_lines)} @@\n{body}",
        encoding="utf-8",
    )
    return path


@pytest.mark.timeout(900)
def test_a_plugin_that_forges_the_probe_record_is_still_reported_inactive(codebox_home: Path, tmp_path: Path) -> None:
    plugin = tmp_path / "quiet-leaver"
    plugin.mkdir()
    (plugin / "quiet-leaver.php").write_text(PLUGIN, encoding="utf-8")
    patch = _patch(tmp_path / "leave.patch", "quiet-leaver.php", PLUGIN, PLUGIN + LEAVE_AND_FORGE)
    assert subprocess.run(["git", "apply", "--check", str(patch)], cwd=plugin).returncode == 0
    proc = evaluate_natively(codebox_home, plugin, ("--patch", str(patch)), tmp_path / "art")
    doc = json.loads(proc.stdout)
    assert recorded_backend(doc["bundleDir"]) == NATIVE
    front = doc["probe"]["frontEnd"]
    assert front["pluginActive"] is False, front
    assert "quiet-leaver is not active after the request" in front["problems"], front
    assert front["status"] == "failed" and "quiet-leaver is not active" in front["fatal"]
    assert doc["tests"]["verdict"] == "plugin-broken" and proc.returncode == 1 and doc["success"] is False
    # the plugin was active when the request began and WordPress loaded: the load check was settled by it
    assert doc["pluginLoad"] == {"before": None, "after": None}
    assert [s["command"] for s in doc["steps"] if s["phase"] == "after"] == ["front-end probe (load check)"]
