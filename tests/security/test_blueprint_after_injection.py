"""A hostile site cannot write code into ``blueprint.after.json`` (docs/site-state.md, "The site after the run
as a blueprint"): the blueprint is built from the site-state diff, i.e. from what the sandbox wrote, and a
reviewer may replay it. Through the real `codebox run` CLI on a native sandbox, the run's PHP plants a user
whose login closes the PHP string and runs code, an active plugin path that climbs out of the plugins folder
and a theme name that does. The blueprint's ``runPHP`` steps are Codebox's fixed code with the data as base64
JSON (the login is there only, decoded exactly), and no plugin or theme step names a path outside its folder."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from codebox_tui.bundle.blueprint_after import RUN_PHP_CODE
from tests.factories.native import run_natively

pytestmark = pytest.mark.native

HOSTILE_LOGIN = "x'); file_put_contents('/tmp/pwned', 'owned'); //"
PLANT = r"""
global $wpdb;
$wpdb->insert($wpdb->users, ['user_login' => base64_decode('LOGIN_B64'), 'user_pass' => 'x', 'user_registered' => '2026-01-01 00:00:00']);
update_user_meta($wpdb->insert_id, $wpdb->prefix . 'capabilities', ['administrator' => true]);
update_option('active_plugins', ['../../../../tmp/evil.php', 'hello.php']);
update_option('stylesheet', '../../evil-theme');
update_option('template', '../../evil-theme');
echo 'planted';
""".replace("LOGIN_B64", base64.b64encode(HOSTILE_LOGIN.encode()).decode())
PREFIX = re.compile(
    r"<\?php require_once '/wordpress/wp-load\.php'; \$data = json_decode\(base64_decode\("
    r"'([A-Za-z0-9+/=]*)'\), true\); "
)


def test_sandbox_text_never_becomes_blueprint_code(tmp_path: Path) -> None:
    out = run_natively(
        *("-c", "wordpress.run-php", "-a", f"code={PLANT}"),
        *("--artifacts", str(tmp_path / "artifacts"), "--json", "--quiet"),
    )
    doc = json.loads(out.stdout)
    assert doc["execution"]["stdout"].endswith("planted"), (doc["execution"], out.stderr)
    blueprint = json.loads((Path(doc["artifacts"]["directory"]) / "blueprint.after.json").read_text())
    decoded = []
    for step in blueprint["steps"]:
        if step["step"] == "runPHP":
            match = PREFIX.match(step["code"])
            assert match and step["code"][match.end() :] in RUN_PHP_CODE.values(), step["code"]
            assert "pwned" not in step["code"] and HOSTILE_LOGIN not in step["code"]
            decoded.append(json.loads(base64.b64decode(match.group(1))))
    assert [{"login": HOSTILE_LOGIN, "capabilities": ["administrator"]}] in decoded
    plugins = [step["pluginPath"] for step in blueprint["steps"] if step["step"] == "activatePlugin"]
    assert plugins == ["/wordpress/wp-content/plugins/hello.php"]
    assert not any(step["step"] == "activateTheme" for step in blueprint["steps"])
    assert ".." not in json.dumps(blueprint)
