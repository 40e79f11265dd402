"""The sandbox must not be able to forge what Codebox measures inside it (docs/security.md, "What the
sandbox can and cannot forge").

Sandboxed PHP can write Playground's control files (/internal/shared: php.ini, the auto_prepend_file,
preload/*.php, the extensions folder). Each test plants one of them for real
through a request of a real Playground sandbox (a `wordpress.run-php` command where it needs WordPress, an
ordinary request without it otherwise: the checks that a plant runs, the plants that only write files), in a way that forges the site-state summary of an
ordinary request (it hides a new administrator), and asserts that Codebox's own measurements (the
summary and its diff, checkpoints, the snapshot) are not changed by it, that the planted file is flagged
(`sandbox-control-file-modified`) and that the sandbox's own requests still see what it wrote. Each of
these tests fails when Codebox's measurements run as ordinary requests (checked by making
`probe_php` an alias of `run_php`). The preload and the extensions-ini plants share one sandbox (planted one after
the other, each setting its own marker). All of it is Playground's own: native has no /internal and its probes
run with prepend files forced off (tests/security/test_native_wall.py).

Not here: a compiled prepend planted in the opcache file cache under the clean file's name and
timestamp. Tried for real, PHP did not serve it even to the sandbox's own requests, so a test could
not fail; probes do not depend on it anyway (docs/security.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.contracts.runtime import RuntimePolicy
from codebox_tui.lifecycle.request import CommandStep, RunRequest
from codebox_tui.lifecycle.service import RunService
from codebox_tui.runtime import site_state
from codebox_tui.runtime.site_state_diff import diff_summaries
from codebox_tui.settings import get_settings

pytestmark = pytest.mark.playground  # /internal/shared and its php.ini, prepend, preload and ini scan are php-wasm's

PREPEND = "/internal/shared/auto_prepend_file.php"
COMMANDS = ["wordpress.run-php", "wp-codebox.checkpoint-create", "wp-codebox.checkpoint-restore"]

# Rewrites any JSON document a request prints so that the user `evil-admin` and the option `evil_option`
# are gone: what a forged site-state summary needs (the planted code runs before the request's own).
FORGE = r"""
ob_start(function ($out) {
    $doc = json_decode($out, true);
    if (!is_array($doc)) { return $out; }
    foreach (($doc['users'] ?? []) as $id => $user) {
        if (($user['login'] ?? '') === 'evil-admin') { unset($doc['users'][$id]); }
    }
    unset($doc['options']['evil_option']);
    if (isset($doc['controlFiles'])) { $doc['controlFiles'] = []; }
    foreach (($doc['database']['tables'] ?? []) as $i => $table) {
        foreach (($table['rows'] ?? []) as $j => $row) {
            if (($row['user_login'] ?? '') === 'evil-admin') { unset($doc['database']['tables'][$i]['rows'][$j]); }
        }
    }
    return json_encode($doc);
});
$GLOBALS['codebox_forged'] = true;
"""

ADD_ADMIN = (
    "$id = wp_insert_user(['user_login' => 'evil-admin', 'user_pass' => 'x-123456789-y', "
    "'role' => 'administrator']); update_option('evil_option', 'planted'); echo is_wp_error($id) ? 'no' : 'admin';"
)


def _php_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _php(run: Any, code: str) -> str:
    result = run.execute("wordpress.run-php", [f"code={code}"])
    assert result.exitCode == 0, result.stderr
    return str(result.stdout)


def _plant_prepend() -> str:
    """PHP that appends FORGE to Playground's prepend (which keeps working: consts and preload)."""
    return f"file_put_contents('{PREPEND}', file_get_contents('{PREPEND}') . \"\\n\" . {_php_string(FORGE)});"


def _users(summary: Any) -> set[str]:
    return {user.login for user in summary.users.values()}


def _ordinary(run: Any, code: str) -> str:
    """What ``code`` prints in an ordinary request of the sandbox (the kind its commands make, without loading
    WordPress, which the checks below do not need)."""
    return str(run.sandbox.run_php("<?php " + code, 60).text)


FORGED = "echo empty($GLOBALS['%s']) ? 'clean' : 'forged';"


def _forged_in_ordinary_request(run: Any, marker: str = "codebox_forged") -> bool:
    """The planted code (the one that sets ``marker``) really runs in the sandbox's own requests (the attack is
    live, not a no-op)."""
    return _ordinary(run, FORGED % marker) == "forged"


def _forged_with_prepend(run: Any) -> str:
    """In one ordinary request: whether the planted prepend ran, and the auto_prepend_file its php.ini names."""
    return _ordinary(run, FORGED % "codebox_forged" + " echo ' ', ini_get('auto_prepend_file');")


EXTENSION_MARKER = "codebox_forged_by_extension_ini"


@pytest.fixture(scope="module")
def preload_then_extensions_ini(
    playground_session: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """One Playground sandbox for two plants, each checked by its own test below: a preload file, then an
    extensions ini naming a prepend of its own (which sets another marker, so each plant is seen running on its
    own). What each test needs is recorded as it happens."""
    seen: dict[str, Any] = {}
    with playground_session.new_run(tmp_path_factory.mktemp("preload-extensions"), commands=COMMANDS) as run:
        run.boot_sandbox()
        seen["before"] = site_state.take_summary(run.sandbox)
        seen["preload-plant"] = _php(
            run,
            ADD_ADMIN + "@mkdir('/internal/shared/preload', 0777, true); "
            "file_put_contents('/internal/shared/preload/zz-forge.php', "
            f"{_php_string('<?php ' + FORGE)});",
        )
        seen["preload-live"] = _forged_in_ordinary_request(run)
        seen["after-preload"] = site_state.take_summary(run.sandbox)
        seen["preload-still-live"] = _forged_in_ordinary_request(run)  # the sandbox's file still runs
        forge = FORGE.replace("$GLOBALS['codebox_forged']", f"$GLOBALS['{EXTENSION_MARKER}']")
        planted = "<?php require '/internal/shared/auto_prepend_file.php';" + forge
        seen["extensions-plant"] = _ordinary(
            run,
            f"file_put_contents('/tmp/forge.php', {_php_string(planted)});"
            "file_put_contents('/internal/shared/extensions/zz-forge.ini', \"auto_prepend_file=/tmp/forge.php\\n\");"
            "echo 'planted';",
        )
        run.sandbox.run_cli(["php", "-r", "echo 1;"], 60.0)  # the next request starts a new runtime
        seen["extensions-live"] = _forged_in_ordinary_request(run, EXTENSION_MARKER)
        seen["after-extensions"] = site_state.take_summary(run.sandbox)
        yield seen


def test_a_planted_prepend_does_not_hide_a_new_administrator_from_the_run_diff(tmp_path: Path) -> None:
    """A whole run through the lifecycle: the command adds an administrator and plants a prepend that
    removes it from every JSON document; the bundle's site-state diff still shows it, flagged, and the
    planted prepend is flagged as a control file."""
    code = ADD_ADMIN + _plant_prepend()
    request = RunRequest(
        commands=[
            CommandStep("wordpress.run-php", [f"code={code}"]),
            CommandStep("wordpress.run-php", ["code=echo empty($GLOBALS['codebox_forged']) ? 'clean' : 'forged';"]),
        ],
        policy=RuntimePolicy(commands=["wordpress.run-php"]),
        artifacts_root=tmp_path,
    )
    outcome = RunService(get_settings()).run(request)
    assert outcome.status == "completed", outcome.failure_text()
    assert not outcome.success  # the planted prepend keeps the verdict from being clean
    bundle = outcome.bundle_dir
    assert bundle is not None
    outputs = [json.loads(line) for line in (bundle / "commands.jsonl").read_text(encoding="utf-8").splitlines()]
    assert str(outputs[-1].get("stdout", "")).endswith("forged"), outputs[-1]  # the prepend ran in the sandbox
    diff = json.loads((bundle / "files" / "site-state-diff.json").read_text(encoding="utf-8"))
    assert {u["login"]: u["status"] for u in diff["users"]}.get("evil-admin") == "added"
    assert "evil_option" in {o["name"] for o in diff["options"]}
    risks = {(r["code"], r["subject"]) for r in diff["risks"]}
    assert ("new-administrator", "evil-admin") in risks
    assert ("sandbox-control-file-modified", PREPEND) in risks
    assert {c["path"]: c["status"] for c in diff["controlFiles"]}[PREPEND] == "changed"
    review = json.loads((bundle / "files" / "review.json").read_text(encoding="utf-8"))
    assert {"site-state:new-administrator", "site-state:sandbox-control-file-modified"} <= set(review["riskFlags"])


def test_a_planted_preload_file_does_not_forge_the_summary(preload_then_extensions_ini: dict[str, Any]) -> None:
    seen = preload_then_extensions_ini
    assert seen["preload-plant"].endswith("admin")
    assert seen["preload-live"]
    after = seen["after-preload"]
    assert "evil-admin" in _users(after) and "evil_option" in after.options
    diff = diff_summaries(seen["before"], after)
    assert ("sandbox-control-file-modified", "/internal/shared/preload/zz-forge.php") in {
        (r.code, r.subject) for r in diff.risks
    }
    assert any(r.code == "new-administrator" and r.subject == "evil-admin" for r in diff.risks)
    assert seen["preload-still-live"]  # the sandbox's file is still there and still runs


def test_a_php_ini_prepend_taking_effect_after_a_runtime_rotation_does_not_forge_the_summary(
    make_run_session: Any,
) -> None:
    """php.ini is read when a PHP runtime starts; `pg.cli` makes the next request start a new one. The
    planted php.ini names a prepend of its own in /tmp."""
    run = make_run_session(commands=COMMANDS)
    run.boot_sandbox()
    before = site_state.take_summary(run.sandbox)
    planted = "<?php require '/internal/shared/auto_prepend_file.php';" + FORGE
    assert _php(
        run,
        ADD_ADMIN + f"file_put_contents('/tmp/forge.php', {_php_string(planted)});"
        "file_put_contents('/internal/shared/php.ini', \"\\nauto_prepend_file=/tmp/forge.php\\n\", FILE_APPEND);",
    ).endswith("admin")
    run.sandbox.run_cli(["php", "-r", "echo 1;"], 60.0)  # the next request starts a new runtime
    assert _forged_with_prepend(run) == "forged /tmp/forge.php"
    after = site_state.take_summary(run.sandbox)
    assert "evil-admin" in _users(after) and "evil_option" in after.options
    flagged = {r.subject for r in diff_summaries(before, after).risks if r.code == "sandbox-control-file-modified"}
    assert "/internal/shared/php.ini" in flagged
    # not silently fixed: the sandbox's own requests run under its php.ini again
    assert _forged_with_prepend(run) == "forged /tmp/forge.php"


def test_a_planted_extensions_ini_does_not_forge_the_summary(preload_then_extensions_ini: dict[str, Any]) -> None:
    """PHP scans /internal/shared/extensions/*.ini when a runtime starts (intl.ini lives there); the planted ini
    names a prepend that sets a marker of its own, seen in the sandbox's request after the runtime rotated."""
    seen = preload_then_extensions_ini
    assert seen["extensions-plant"] == "planted"
    assert seen["extensions-live"]
    after = seen["after-extensions"]
    assert "evil-admin" in _users(after)
    assert "/internal/shared/extensions/zz-forge.ini" in after.controlFiles


def test_a_planted_prepend_changes_neither_a_checkpoint_nor_its_restore(make_run_session: Any) -> None:
    """Checkpoint create and restore run as probes: a prepend that hides the administrator from the
    snapshot (or that would run inside the restore) has no effect; the restore brings back exactly the
    state of the checkpoint."""
    run = make_run_session(commands=COMMANDS)
    run.boot_sandbox()
    assert _php(run, ADD_ADMIN).endswith("admin")
    with_admin = site_state.take_summary(run.sandbox)
    assert _ordinary(run, _plant_prepend() + "echo 'planted';") == "planted"
    assert _forged_in_ordinary_request(run)
    created = run.execute("wp-codebox.checkpoint-create", ["name=with-admin"])
    assert created.result.json_["status"] == "created"
    assert _php(
        run,
        "require_once ABSPATH . 'wp-admin/includes/user.php'; "
        "wp_delete_user(get_user_by('login', 'evil-admin')->ID); echo 'deleted';",
    ).endswith("deleted")
    assert "evil-admin" not in _users(site_state.take_summary(run.sandbox))
    restored = run.execute("wp-codebox.checkpoint-restore", ["name=with-admin"])
    assert restored.result.json_["status"] == "restored"
    back = site_state.take_summary(run.sandbox)
    assert "evil-admin" in _users(back)
    assert diff_summaries(with_admin, back).users == []
    # the snapshot taken to the host is not forged either
    snapshot = site_state.take_snapshot(run.sandbox, site_state.snapshot_scope({}, []))
    logins = {
        row.get("user_login")
        for table in snapshot.database.tables
        if table.name.endswith("users")
        for row in table.rows
    }
    assert "evil-admin" in logins
    assert _forged_in_ordinary_request(run)  # the sandbox's prepend was put back after each probe


def test_the_sidecar_refuses_to_start_without_the_probe_guard(tmp_path: Path) -> None:
    """Defence in depth: without probeguard.mjs preloaded there are no probes, so no sidecar starts."""
    import shutil
    import subprocess

    from codebox_tui.settings import NODE_BRIDGE_DIR

    node = shutil.which("node")
    assert node, "node is needed for the Playground bridge"
    done = subprocess.run(
        [node, "--import", "./netguard.mjs", "--import", "./nospawn.mjs", "sidecar.mjs"],
        cwd=NODE_BRIDGE_DIR,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CODEBOX_NETWORK_POLICY": "deny"},
    )
    assert done.returncode == 3, (done.returncode, done.stderr[-500:])
    assert "probeguard.mjs was not preloaded" in done.stderr
    assert '"event":"hello"' not in done.stdout
