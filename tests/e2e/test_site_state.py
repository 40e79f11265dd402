"""The site's own state through real sandboxes: the summary and the site-state diff of a plugin's
activation, checkpoints (create / mutate / restore) and runtime snapshots (docs/site-state.md).

All on the native backend (docs/backends.md): the summary, diff, checkpoints and snapshots are the same code on
both backends (runtime/site_state.py), so nothing here is about Playground; each test asserts the backend its run
used. Playground's own measurements are attacked in tests/security/test_trusted_probes.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.bundle.verify import verify_bundle
from codebox_tui.contracts.site_state import STATE_SECTIONS, RuntimeSnapshot, StateExportConfig
from codebox_tui.errors import BadInputError, SandboxError
from codebox_tui.runtime import site_state
from codebox_tui.runtime.site_state_diff import diff_summaries
from tests.factories.native import NATIVE, native_run, recorded_backend

pytestmark = pytest.mark.native

REPO = Path(__file__).resolve().parents[2]
DEMO_PLUGIN = REPO / "examples" / "site-state-plugin"
DEMO_TARGET = "/wordpress/wp-content/plugins/site-state-plugin"
COMMANDS = [
    "wordpress.run-php",
    "wordpress.capture-state-bundle",
    "wp-codebox.checkpoint-create",
    "wp-codebox.checkpoint-restore",
    "wp-codebox.checkpoint-list",
]

MUTATE = r"""
update_option('blogname', 'Changed by the test');
wp_insert_post(['post_title' => 'Added post', 'post_status' => 'publish', 'post_type' => 'post']);
wp_insert_term('Added term', 'category');
wp_insert_user(['user_login' => 'added-editor', 'user_pass' => 'x-123456789', 'role' => 'editor']);
wp_delete_post(2, true);
global $wpdb;
$wpdb->query("CREATE TABLE {$wpdb->prefix}added_table (id INTEGER PRIMARY KEY, v TEXT)");
@mkdir(WP_CONTENT_DIR . '/uploads/2026', 0755, true);
file_put_contents(WP_CONTENT_DIR . '/uploads/2026/added.txt', 'added');
file_put_contents(WP_CONTENT_DIR . '/themes/twentytwentyfour/style.css', '/* overwritten */');
echo 'mutated';
"""


def _php(run: Any, code: str) -> str:
    result = run.execute("wordpress.run-php", [f"code={code}"])
    assert result.exitCode == 0, result.stderr
    return str(result.stdout)


@pytest.fixture
def make_run_session(tmp_path: Path) -> Iterator[Any]:
    """Fresh native RunSessions (booted by the test), every one closed afterwards."""
    made: list[Any] = []

    def factory(**spec_kwargs: Any) -> Any:
        made.append(native_run(tmp_path / f"artifacts-{len(made)}", **spec_kwargs))
        return made[-1]

    yield factory
    for run in made:
        run.close()


def _boot_native(run: Any) -> None:
    run.boot_sandbox()
    assert run.backend.name == NATIVE


def _export(run: Any) -> dict[str, Any]:
    export = site_state.export_wordpress_state(run.sandbox, StateExportConfig(sections=list(STATE_SECTIONS)))
    return {section.section: section.data for section in export.sections}


def test_plugin_activation_shows_in_the_site_state_diff_with_risk_flags(make_run_session: Any) -> None:
    run = make_run_session(mounts=[f"{DEMO_PLUGIN}:{DEMO_TARGET}:readonly"], commands=COMMANDS)
    _boot_native(run)
    before = site_state.take_summary(run.sandbox)
    assert _php(
        run,
        "require_once ABSPATH . 'wp-admin/includes/plugin.php'; "
        "$r = activate_plugin('site-state-plugin/site-state-plugin.php'); echo is_wp_error($r) ? $r->get_error_message() : 'ok';",
    ).endswith("ok")
    after = site_state.take_summary(run.sandbox)
    diff = diff_summaries(before, after)

    tables = {t.name: t for t in diff.tables}
    demo_log = f"{run.sandbox.table_prefix}site_state_demo_log"  # the native sandbox's own prefix
    assert tables[demo_log].status == "created"
    assert tables[demo_log].columnsAdded == ["id", "message"]
    options = {o.name: o for o in diff.options}
    assert options["site_state_demo_version"].status == "added"
    assert options["site_state_demo_version"].after == "1.0.0"
    secret = options["site_state_demo_api_key"]
    assert secret.status == "added" and secret.redacted and secret.after is None
    assert "sk-demo-0123456789abcdef" not in diff.model_dump_json()
    assert [(c.hook, c.status, c.schedule) for c in diff.cron] == [("site_state_demo_ping", "added", "hourly")]
    users = {u.login: u for u in diff.users}
    assert users["site-state-demo-admin"].status == "added"
    assert diff.activePlugins is not None and diff.activePlugins.after == ["site-state-plugin/site-state-plugin.php"]

    flags = {(r.code, r.subject) for r in diff.risks}
    assert ("new-administrator", "site-state-demo-admin") in flags
    assert ("cron-event-added", "site_state_demo_ping") in flags
    assert ("active-plugins-changed", "active_plugins") in flags
    assert not any(code in ("siteurl-changed", "home-changed") for code, _ in flags)
    # nothing of the user's e-mail or password hash reaches the summary
    assert "demo-admin@example.invalid" not in after.model_dump_json()


def test_checkpoint_create_mutate_restore_gives_the_identical_state(make_run_session: Any) -> None:
    run = make_run_session(mounts=[f"{DEMO_PLUGIN}:{DEMO_TARGET}:readonly"], commands=COMMANDS)
    _boot_native(run)
    export_before = _export(run)
    summary_before = site_state.take_summary(run.sandbox)
    created = run.execute("wp-codebox.checkpoint-create", ["name=base", 'metadata-json={"why": "test"}'])
    assert created.result.json_["status"] == "created"
    assert created.result.json_["checkpoint"]["metadata"] == {"why": "test"}
    stats = created.result.json_["checkpoint"]["summary"]
    assert stats["tables"] > 10 and stats["files"] > 10

    assert _php(run, MUTATE).endswith("mutated")
    mutated = diff_summaries(summary_before, site_state.take_summary(run.sandbox))
    assert mutated.posts and mutated.terms and mutated.users and any(t.status == "created" for t in mutated.tables)

    restored = run.execute("wp-codebox.checkpoint-restore", ["name=base"])
    assert restored.result.json_["status"] == "restored"
    assert restored.result.json_["checkpoint"]["restoredAt"]
    restore_stats = restored.result.json_["checkpoint"]["summary"]["restore"]
    assert restore_stats["filesWritten"] == 1 and restore_stats["filesDeleted"] == 1  # style.css back, added.txt gone
    assert diff_summaries(summary_before, site_state.take_summary(run.sandbox)).empty
    assert _export(run) == export_before
    assert (
        _php(
            run,
            "echo json_encode([is_dir(WP_CONTENT_DIR . '/uploads/2026'), "
            "md5_file(WP_CONTENT_DIR . '/themes/twentytwentyfour/style.css') !== md5('/* overwritten */')]);",
        )
        == "[false,true]"
    )

    listed = run.execute("wp-codebox.checkpoint-list", [])
    assert [c["name"] for c in listed.result.json_["checkpoints"]] == ["base"]
    with pytest.raises(SandboxError, match=r"no checkpoint named missing in this sandbox \(existing: base\)"):
        run.execute("wp-codebox.checkpoint-restore", ["name=missing"])


def test_capture_state_bundle_writes_a_snapshot_that_restores(make_run_session: Any) -> None:
    run = make_run_session(mounts=[f"{DEMO_PLUGIN}:{DEMO_TARGET}:readonly"], commands=COMMANDS)
    _boot_native(run)
    summary_before = site_state.take_summary(run.sandbox)
    result = run.execute("wordpress.capture-state-bundle", ["sections=summary,users,options"])
    refs = {ref["kind"]: ref["path"] for ref in result.artifactRefs}
    written = RuntimeSnapshot.model_validate_json((run.run_dir / refs["runtime-snapshot"]).read_text())
    assert refs["runtime-snapshot"] == f"files/runtime-snapshots/{written.id}.json"
    assert all(f.base64 is None and f.blob == f"files/runtime-snapshots/blobs/{f.sha256}" for f in written.files)
    blobs = {p.name for p in (run.run_dir / "files/runtime-snapshots/blobs").iterdir()}
    assert blobs == {f.sha256 for f in written.files}
    snapshot = site_state.load_snapshot(run.run_dir, refs["runtime-snapshot"])
    assert snapshot.compatibility.wordpressVersion == run.sandbox.wordpress_version
    assert snapshot.hashes.model_dump() == site_state.snapshot_hashes(
        snapshot.model_dump(mode="json", exclude_none=True)["database"],
        [f.model_dump(mode="json") for f in snapshot.files],
    )
    paths = {f.path for f in snapshot.files}
    assert "plugins/hello.php" in paths
    assert not any(p.startswith(("plugins/site-state-plugin", "database/")) for p in paths)  # read-only mount, db
    skipped = {s["path"]: s["reason"] for s in snapshot.metadata["skippedWpContentPaths"]}
    assert skipped["plugins/site-state-plugin"] == "excluded"
    state = json.loads((run.run_dir / refs["wordpress-state"]).read_text())
    users = next(s["data"]["items"] for s in state["sections"] if s["section"] == "users")
    assert users and all("user_email" not in u and "user_pass" not in u for u in users)
    # the safe export leaves logins out, and what WordPress derives from them (docs/site-state.md)
    assert all(set(u) == {"id", "roles", "registered"} for u in users), users
    assert '"admin"' not in (run.run_dir / refs["wordpress-state"]).read_text()  # the site's one login

    assert _php(run, MUTATE).endswith("mutated")
    stats = site_state.restore_snapshot(run.sandbox, snapshot)
    assert stats["filesWritten"] == 1 and stats["filesDeleted"] == 1
    assert diff_summaries(summary_before, site_state.take_summary(run.sandbox)).empty

    other = snapshot.model_copy(
        update={"compatibility": snapshot.compatibility.model_copy(update={"wordpressVersion": "5.0"})}
    )
    with pytest.raises(BadInputError, match=r"taken on wordpressVersion 5\.0"):
        site_state.restore_snapshot(run.sandbox, other)

    summary = run.capture()
    from codebox_tui.bundle.verify import verify_bundle

    verification = verify_bundle(summary.path)
    assert verification.valid, verification.violations
    listed = json.loads((summary.path / "manifest.json").read_text())
    kinds = {f["path"]: f["kind"] for f in listed["files"]}
    assert kinds[refs["runtime-snapshot"]] == "runtime-snapshot"


ACTIVATE = (
    "require_once ABSPATH . 'wp-admin/includes/plugin.php'; "
    "$r = activate_plugin('site-state-plugin/site-state-plugin.php'); "
    "echo is_wp_error($r) ? $r->get_error_message() : 'ok';"
)


def _codebox(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codebox_tui", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


def test_every_run_bundles_the_site_state_diff_with_its_risk_flags() -> None:
    """`codebox run` of the demo plugin's activation: the bundle carries files/site-state-diff.json
    (listed, verified), its risks are review risk flags, and `artifacts show` prints them."""
    out = _codebox(
        "run",
        "--backend",
        "native",
        "--mount",
        f"{DEMO_PLUGIN}:{DEMO_TARGET}:readonly",
        "--command",
        "wordpress.run-php",
        "--arg",
        f"code={ACTIVATE}",
        "--json",
        "--quiet",
    )
    doc = json.loads(out.stdout)
    assert doc["success"], out.stderr
    bundle = Path(doc["artifacts"]["directory"])
    assert recorded_backend(bundle) == NATIVE

    diff = json.loads((bundle / "files" / "site-state-diff.json").read_text(encoding="utf-8"))
    assert diff["schema"] == "codebox/site-state-diff/v1"
    created = {t["name"]: t["status"] for t in diff["tables"]}
    # under the native sandbox's own table prefix (cb…_)
    demo_log = next(name for name in created if name.startswith("cb") and name.endswith("_site_state_demo_log"))
    assert created[demo_log] == "created"
    options = {o["name"]: o for o in diff["options"]}
    assert options["site_state_demo_version"]["after"] == "1.0.0"
    assert options["site_state_demo_api_key"]["redacted"] is True
    assert [(c["hook"], c["status"]) for c in diff["cron"]] == [("site_state_demo_ping", "added")]
    assert {u["login"]: u["status"] for u in diff["users"]}["site-state-demo-admin"] == "added"
    risks = {(r["code"], r["subject"]) for r in diff["risks"]}
    assert {
        ("new-administrator", "site-state-demo-admin"),
        ("cron-event-added", "site_state_demo_ping"),
        ("active-plugins-changed", "active_plugins"),
    } <= risks
    assert "sk-demo-0123456789abcdef" not in (bundle / "files" / "site-state-diff.json").read_text(encoding="utf-8")

    manifest = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    assert {f["path"]: f.get("kind") for f in manifest["files"]}["files/site-state-diff.json"] == "site-state-diff"
    review = json.loads((bundle / "files" / "review.json").read_text(encoding="utf-8"))
    assert {"site-state:new-administrator", "site-state:cron-event-added", "site-state:active-plugins-changed"} <= set(
        review["riskFlags"]
    )
    assert verify_bundle(bundle).valid
    events = [json.loads(line) for line in (bundle / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    types = [e["type"] for e in events]
    # the first summary comes before the first command, the second after the last one
    assert types.index("site-state.summary") < types.index("command.started")
    assert max(i for i, t in enumerate(types) if t == "site-state.summary") > types.index("command.finished")

    show = _codebox("artifacts", "show", str(bundle))
    assert show.returncode == 0, show.stderr
    for text in (
        "new-administrator",
        "site-state-demo-admin",
        "site_state_demo_ping",
        demo_log,
        "site_state_demo_version",
    ):
        assert text in show.stdout
    shown = json.loads(_codebox("artifacts", "show", str(bundle), "--json").stdout)["siteState"]
    assert shown["counts"]["tables"] >= 1 and shown["counts"]["users"] == 1 and shown["counts"]["cron"] == 1
    assert {r["code"] for r in shown["risks"]} >= {"new-administrator", "cron-event-added"}


def test_site_state_off_leaves_no_diff() -> None:
    out = _codebox(
        "run",
        "--backend",
        "native",
        "--command",
        "wordpress.run-php",
        "--arg",
        "code=echo 1;",
        "--json",
        "--quiet",
        env={"CODEBOX_SITE_STATE": "off"},
    )
    doc = json.loads(out.stdout)
    assert doc["success"], out.stderr
    bundle = Path(doc["artifacts"]["directory"])
    assert recorded_backend(bundle) == NATIVE
    assert not (bundle / "files" / "site-state-diff.json").exists()
    assert verify_bundle(bundle).valid


def test_a_summary_that_fails_is_a_warning_and_a_high_risk_flag_and_the_run_goes_on() -> None:
    """A command that deletes the site's database: the second summary fails (database-missing), the run
    still completes and verifies, the failure is a warning event, and the diff fails closed: one high
    `summary-unavailable` risk flag, also in the review's risk flags, and the run does not read as a success
    (exit 1: a site whose state could not be measured is never clean)."""
    out = _codebox(
        "run",
        "--backend",
        "native",
        "--command",
        "wordpress.run-php",
        "--arg",
        "code=unlink('/wordpress/wp-content/database/.ht.sqlite'); echo 'gone';",
        "--json",
        "--quiet",
    )
    doc = json.loads(out.stdout)
    assert not doc["success"] and "error" not in doc, out.stderr  # not an error: an unclean verdict
    assert out.returncode == 1 and doc["execution"]["exitCode"] == 0, out.stderr  # the command itself ran
    assert doc["siteStateRisks"] == ["summary-unavailable"]
    bundle = Path(doc["artifacts"]["directory"])
    assert recorded_backend(bundle) == NATIVE
    diff = json.loads((bundle / "files" / "site-state-diff.json").read_text(encoding="utf-8"))
    assert [(r["code"], r["severity"]) for r in diff["risks"]] == [("summary-unavailable", "high")]
    assert "database-missing" in diff["risks"][0]["message"] or "does not exist" in diff["risks"][0]["message"]
    review = json.loads((bundle / "files" / "review.json").read_text(encoding="utf-8"))
    assert "site-state:summary-unavailable" in review["riskFlags"]
    assert verify_bundle(bundle).valid
    events = [json.loads(line) for line in (bundle / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    warnings = [e for e in events if e["type"] == "site-state.unavailable"]
    assert [(e["level"], e["data"]["phase"]) for e in warnings] == [("warning", "after")]
    assert warnings[0]["data"]["code"] == "database-missing"
