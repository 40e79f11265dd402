"""A run must not hide what it did to the site behind the site-state summary (issue #25, finding 2;
docs/site-state.md, "Fail closed" and "Files outside the mounts"). Each test attacks through a real sandbox and a
whole run (RunService, or the CLI), and reads the sealed bundle:

- on Playground, one run checked by two tests (wp-config.php, core, ``db.php`` and ``/internal`` are writable there;
  on native they are read-only binds, so these attacks cannot happen): the site is pointed at a copied database
  (DB_FILE in wp-config.php) and an administrator is added there; then configuration and core files outside the
  mounts are edited (wp-config.php, a wp-includes file, a db.php drop-in, php.ini, the prepend file); what
  Playground itself writes during the run (the opcache folder, wp-env.php) is not among the flagged files;
- natively (the summary and its diff are the same code on both backends; each asserts the backend its bundle
  records): the summary is made to fail (the options table it needs is dropped, a decoy `options` table
  planted), in a run and in a recipe; a plain run reports nothing;
- natively, code that assumes the table prefix `wp_` (free on native, where each sandbox has its own prefix): clean
  copies of the site's tables planted as `wp_*` hide neither a new administrator nor a dropped options table (the
  summary reads the prefix the host names, never the `wp_` one it used to prefer; both fail with that
  preference restored in runtime/php/site_state.php `cbs_prefix`).

Before the fix, (a) and (c) gave no risk flag and (b) left the bundle without any site-state diff."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.contracts.runtime import RuntimePolicy
from codebox_tui.lifecycle.request import CommandStep, RunRequest
from codebox_tui.lifecycle.service import RunService
from codebox_tui.settings import get_settings
from tests.factories.native import NATIVE, PLAYGROUND, recorded_backend


def _run(tmp_path: Path, *codes: str, backend: str) -> tuple[dict[str, Any], dict[str, Any]]:
    request = RunRequest(
        commands=[CommandStep("wordpress.run-php", [f"code={code}"]) for code in codes],
        policy=RuntimePolicy(commands=["wordpress.run-php"]),
        artifacts_root=tmp_path,
        backend=backend,
    )
    outcome = RunService(get_settings()).run(request)
    assert outcome.bundle_dir is not None, outcome.failure_text()
    assert recorded_backend(outcome.bundle_dir) == (NATIVE if backend == "native" else PLAYGROUND)
    files = outcome.bundle_dir / "files"
    diff = json.loads((files / "site-state-diff.json").read_text(encoding="utf-8"))
    review = json.loads((files / "review.json").read_text(encoding="utf-8"))
    return diff, review


def _risks(diff: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(r["code"], r["subject"], r["severity"]) for r in diff["risks"]}


REDIRECT = (
    "copy('/wordpress/wp-content/database/.ht.sqlite', '/wordpress/wp-content/database/copy.sqlite');"
    "$c = file_get_contents('/wordpress/wp-config.php');"
    "file_put_contents('/wordpress/wp-config.php', str_replace('<?php', "
    "\"<?php define('DB_FILE', 'copy.sqlite');\", $c)); echo 'redirected';"
)
ADD_ADMIN = (
    "$id = wp_insert_user(['user_login' => 'hidden-admin', 'user_pass' => 'x-123456789-y', "
    "'role' => 'administrator']); echo is_wp_error($id) ? 'no' : 'admin';"
)
EDITS = (
    "file_put_contents('/wordpress/wp-config.php', \"\\n// edited\\n\", FILE_APPEND);"
    "file_put_contents('/wordpress/wp-includes/version.php', \"\\n// edited\\n\", FILE_APPEND);"
    "file_put_contents('/wordpress/wp-content/db.php', '<?php // planted');"
    "file_put_contents('/internal/shared/php.ini', \"\\n; edited\\n\", FILE_APPEND);"
    "file_put_contents('/internal/shared/auto_prepend_file.php', \"\\n// edited\\n\", FILE_APPEND);"
    "echo 'edited';"
)
EDITED = (
    "/wordpress/wp-includes/",
    "/wordpress/wp-content/db.php",
    "/internal/shared/php.ini",
    "/internal/shared/auto_prepend_file.php",
)


@pytest.fixture(scope="module")
def playground_edits(
    playground_session: Any, tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One Playground run: the database redirected and an administrator added in the copy, then the configuration
    and core files edited (the two tests below each check one attack's flags)."""
    return _run(tmp_path_factory.mktemp("fail-closed"), REDIRECT, ADD_ADMIN, EDITS, backend="playground")


@pytest.mark.playground
def test_a_copied_database_named_in_wp_config_is_a_high_database_configuration_flag(
    playground_edits: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    diff, review = playground_edits
    risks = _risks(diff)
    assert ("database-configuration-changed", "/wordpress/wp-config.php", "high") in risks
    assert ("database-configuration-changed", "/wordpress/wp-content/database/copy.sqlite", "high") in risks
    assert "site-state:database-configuration-changed" in review["riskFlags"]


@pytest.mark.playground
def test_configuration_and_core_files_edited_outside_the_mounts_are_each_flagged_high(
    playground_edits: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    diff, review = playground_edits
    risks = _risks(diff)
    assert ("database-configuration-changed", "/wordpress/wp-config.php", "high") in risks
    for path in EDITED:
        assert ("sandbox-control-file-modified", path, "high") in risks, (path, risks)
    assert {"site-state:database-configuration-changed", "site-state:sandbox-control-file-modified"} <= set(
        review["riskFlags"]
    )
    # no false positives on Playground: what it writes itself during a run (the opcache folder, wp-env.php) is
    # no control-file change (the plain run below checks the same natively)
    assert {r[1] for r in risks if r[0] == "sandbox-control-file-modified"} == set(EDITED), risks


# The site's own SQLite connection, below WordPress's query translator: the native site's SQLite Database Integration
# dies with a fatal error translating this CREATE TABLE (wpdb->query), while the statements go through as SQL here.
DECOY = (
    "global $wpdb; $pdo = $wpdb->dbh->get_pdo();"
    "$pdo->exec('CREATE TABLE options (option_name TEXT, option_value TEXT)');"
)


@pytest.mark.native
def test_a_summary_broken_by_decoy_tables_fails_closed(tmp_path: Path) -> None:
    decoy = (
        DECOY + "$pdo->exec(\"INSERT INTO options VALUES ('siteurl', 'http://decoy')\");"
        "$pdo->exec('DROP TABLE ' . $wpdb->options); echo 'decoyed';"
    )
    diff, review = _run(tmp_path, decoy, backend="native")
    assert [(r["code"], r["severity"]) for r in diff["risks"]] == [("summary-unavailable", "high")]
    assert diff["empty"] is False
    assert "site-state:summary-unavailable" in review["riskFlags"]


# Clean copies of the site's tables under `wp_`, their prefixed keys renamed the way a `wp_` site has them: what a
# summary reading `wp_` would take for the site.
WP_DECOYS = (
    "global $wpdb; $pdo = $wpdb->dbh->get_pdo(); $p = $wpdb->prefix; $n = strlen($p);"
    "foreach (['options', 'users', 'usermeta', 'posts', 'terms', 'term_taxonomy'] as $t) {"
    ' $pdo->exec("CREATE TABLE wp_$t AS SELECT * FROM $p$t"); }'
    "$pdo->exec(\"UPDATE wp_usermeta SET meta_key = 'wp_' || substr(meta_key, $n + 1) WHERE substr(meta_key, 1, $n) = '$p'\");"
    "$pdo->exec(\"UPDATE wp_options SET option_name = 'wp_user_roles' WHERE option_name = '{$p}user_roles'\");"
    "echo $p === 'wp_' ? 'no own prefix' : 'planted';"
)


@pytest.mark.native
def test_wp_prefixed_decoy_tables_hide_no_new_administrator(tmp_path: Path) -> None:
    diff, review = _run(tmp_path, WP_DECOYS, ADD_ADMIN, backend="native")
    assert ("new-administrator", "hidden-admin", "high") in _risks(diff), diff["risks"]
    assert {u["login"]: u["status"] for u in diff["users"]}["hidden-admin"] == "added"
    assert "site-state:new-administrator" in review["riskFlags"]


@pytest.mark.native
def test_wp_prefixed_decoys_beside_a_dropped_options_table_fail_closed(tmp_path: Path) -> None:
    drop = "global $wpdb; $wpdb->dbh->get_pdo()->exec('DROP TABLE ' . $wpdb->options); echo 'dropped';"
    diff, review = _run(tmp_path, WP_DECOYS, drop, backend="native")
    assert [(r["code"], r["severity"]) for r in diff["risks"]] == [("summary-unavailable", "high")]
    assert "site-state:summary-unavailable" in review["riskFlags"]


@pytest.mark.native
def test_a_plain_run_reports_no_site_file_changes(tmp_path: Path) -> None:
    """No false positives: what the sandbox writes itself during a run (native: its opcache file cache; on
    Playground checked in the edits run above) is not a control-file change, and the core fingerprints are
    stable."""
    diff, review = _run(tmp_path, "echo 1;", backend="native")
    assert diff["risks"] == [] and diff["controlFiles"] == [], diff
    assert not any(flag.startswith("site-state:") for flag in review["riskFlags"])


@pytest.mark.native
def test_a_recipe_whose_site_state_is_unknown_never_reads_as_passed(tmp_path: Path) -> None:
    """Fail closed reaches the verdict: the same decoy attack inside a recipe makes recipe-run fail (exit 1)
    naming the site-state risk, though every step itself succeeded."""
    import subprocess
    import sys

    decoy = DECOY + "$pdo->exec('DROP TABLE ' . $wpdb->options); echo 'decoyed';"
    recipe = tmp_path / "decoy.json"
    recipe.write_text(
        json.dumps(
            {
                "schema": "wp-codebox/workspace-recipe/v1",
                "workflow": {"steps": [{"command": "wordpress.run-php", "args": [f"code={decoy}"]}]},
            }
        )
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "codebox_tui",
            "recipe-run",
            str(recipe),
            "--backend",
            "native",
            "--artifacts-dir",
            str(tmp_path / "art"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1, done.stderr
    outcome = json.loads(done.stdout)
    assert recorded_backend(outcome["bundleDir"]) == NATIVE
    assert outcome["success"] is False and outcome["status"] == "failed"
    assert [f["phase"] for f in outcome["stepFailures"]] == ["site-state"]
    assert "summary-unavailable" in outcome["stepFailures"][0]["error"]
