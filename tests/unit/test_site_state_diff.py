"""The site-state diff and its risk flags (pure logic over hand-built summaries; the real sandbox side
is covered by tests/e2e/test_site_state.py)."""

from __future__ import annotations

from typing import Any

import pytest

from codebox_tui.contracts.site_state import SiteStateDiff, SiteStateSummary
from codebox_tui.runtime.site_state_diff import diff_summaries, is_secret_name, redact_summary


def _summary(**changes: Any) -> SiteStateSummary:
    base: dict[str, Any] = {
        "takenAt": "2026-01-01T00:00:00.000Z",
        "tablePrefix": "wp_",
        "options": {
            "blogname": {"sha256": "a" * 64, "bytes": 4, "autoload": "yes", "preview": "Blog"},
            "siteurl": {"sha256": "b" * 64, "bytes": 17, "preview": "http://127.0.0.1"},
        },
        "tables": {"wp_options": {"sha256": "c" * 64, "columns": ["option_id", "option_name"], "rows": 2}},
        "posts": {"1": {"type": "post", "status": "publish", "title": "Hello", "sha256": "d" * 64}},
        "terms": {"1": {"taxonomy": "category", "slug": "uncategorized", "name": "Uncategorized", "sha256": "e" * 64}},
        "users": {"1": {"login": "admin", "capabilities": ["administrator"]}},
        "roles": {"editor": ["edit_posts", "moderate_comments"], "subscriber": ["read"]},
        "cron": [{"hook": "wp_version_check", "timestamp": 100, "schedule": "twicedaily", "argsSha256": "f" * 64}],
        "rewriteRules": ["^page/?$"],
        "activePlugins": [],
        "theme": {"stylesheet": "twentytwentyfour", "template": "twentytwentyfour"},
        "siteurl": "http://127.0.0.1",
        "home": "http://127.0.0.1",
    }
    for key, value in changes.items():
        base[key] = value
    return SiteStateSummary.model_validate(base)


def _codes(diff: SiteStateDiff) -> list[str]:
    return [risk.code for risk in diff.risks]


def test_identical_summaries_give_an_empty_diff_without_risks() -> None:
    diff = diff_summaries(_summary(), _summary(takenAt="2026-01-01T00:00:01.000Z"))
    assert diff.empty and not diff.risks and not diff.options


def test_options_added_changed_deleted_with_previews() -> None:
    before = _summary()
    after = _summary(
        options={
            "blogname": {"sha256": "9" * 64, "bytes": 3, "preview": "New"},
            "my_plugin_version": {"sha256": "8" * 64, "bytes": 3, "preview": "1.0"},
        }
    )
    diff = diff_summaries(before, after)
    by_name = {change.name: change for change in diff.options}
    assert by_name["blogname"].status == "changed"
    assert (by_name["blogname"].before, by_name["blogname"].after) == ("Blog", "New")
    assert by_name["my_plugin_version"].status == "added" and by_name["my_plugin_version"].after == "1.0"
    assert by_name["siteurl"].status == "deleted" and by_name["siteurl"].before == "http://127.0.0.1"
    assert not diff.empty


@pytest.mark.parametrize(
    "name",
    [
        "my_api_key",
        "stripe_secret",
        "AUTH_SALT",
        "plugin_license",
        "mp_password",
        "app_token",
        "session_tokens",
        "wp_keys",
    ],
)
def test_secret_like_option_values_never_appear(name: str) -> None:
    assert is_secret_name(name)
    after = _summary(
        options={**_summary().model_dump()["options"], name: {"sha256": "7" * 64, "bytes": 6, "preview": "s3cr3t"}}
    )
    diff = diff_summaries(_summary(), after)
    change = next(c for c in diff.options if c.name == name)
    assert change.redacted and change.after is None and "s3cr3t" not in diff.model_dump_json()
    assert redact_summary(after).options[name].preview is None


@pytest.mark.parametrize("name", ["blogname", "active_plugins", "permalink_structure", "monkey"])
def test_plain_option_names_are_not_secret(name: str) -> None:
    assert not is_secret_name(name)


def test_table_created_altered_dropped_and_row_changes() -> None:
    before = _summary(
        tables={
            "wp_options": {"sha256": "c" * 64, "columns": ["a"], "rows": 2},
            "wp_old": {"sha256": "1" * 64, "columns": ["id"], "rows": 5},
            "wp_posts": {"sha256": "2" * 64, "columns": ["ID"], "rows": 1},
        }
    )
    after = _summary(
        tables={
            "wp_options": {"sha256": "c" * 64, "columns": ["a"], "rows": 3},
            "wp_posts": {"sha256": "3" * 64, "columns": ["ID", "extra"], "rows": 1},
            "wp_new": {"sha256": "4" * 64, "columns": ["id", "v"], "rows": 0},
        }
    )
    changes = {t.name: t for t in diff_summaries(before, after).tables}
    assert changes["wp_new"].status == "created" and changes["wp_new"].columnsAdded == ["id", "v"]
    assert changes["wp_old"].status == "dropped"
    assert changes["wp_posts"].status == "altered" and changes["wp_posts"].columnsAdded == ["extra"]
    assert changes["wp_options"].status == "rows-changed" and (
        changes["wp_options"].rowsBefore,
        changes["wp_options"].rowsAfter,
    ) == (2, 3)


def test_posts_and_terms_created_and_changed() -> None:
    after = _summary(
        posts={
            "1": {"type": "post", "status": "draft", "title": "Hello", "sha256": "0" * 64},
            "12": {"type": "page", "status": "publish", "title": "", "name": "landing", "sha256": "5" * 64},
        },
        terms={},
    )
    diff = diff_summaries(_summary(), after)
    assert [(p.id, p.status, p.label) for p in diff.posts] == [("1", "changed", "Hello"), ("12", "added", "landing")]
    assert [(t.id, t.status, t.kind) for t in diff.terms] == [("1", "deleted", "category")]


def test_new_administrator_is_flagged_high() -> None:
    after = _summary(
        users={
            "1": {"login": "admin", "capabilities": ["administrator"]},
            "2": {"login": "backdoor", "capabilities": ["administrator"]},
        }
    )
    diff = diff_summaries(_summary(), after)
    assert diff.users[0].status == "added" and diff.users[0].capabilitiesAdded == ["administrator"]
    flag = next(r for r in diff.risks if r.code == "new-administrator")
    assert flag.severity == "high" and flag.subject == "backdoor"


def test_promoted_user_and_granted_capabilities_are_flagged() -> None:
    before = _summary(
        users={
            "1": {"login": "admin", "capabilities": ["administrator"]},
            "3": {"login": "eve", "capabilities": ["subscriber"]},
        }
    )
    after = _summary(
        users={
            "1": {"login": "admin", "capabilities": ["administrator"]},
            "3": {"login": "eve", "capabilities": ["subscriber", "manage_options"]},
        }
    )
    diff = diff_summaries(before, after)
    assert _codes(diff) == ["capabilities-granted"] and diff.risks[0].severity == "high"


def test_a_new_subscriber_is_not_a_risk() -> None:
    after = _summary(
        users={
            "1": {"login": "admin", "capabilities": ["administrator"]},
            "2": {"login": "reader", "capabilities": ["subscriber"]},
        }
    )
    diff = diff_summaries(_summary(), after)
    assert diff.users and not diff.risks


def test_role_granted_capabilities_is_flagged() -> None:
    after = _summary(
        roles={
            "editor": ["edit_posts", "moderate_comments", "install_plugins"],
            "subscriber": ["read"],
            "shop_manager": ["read", "edit_products"],
        }
    )
    diff = diff_summaries(_summary(), after)
    flags = {(r.subject, r.severity) for r in diff.risks if r.code == "capabilities-granted"}
    assert flags == {("editor", "high"), ("shop_manager", "medium")}


def test_siteurl_home_plugins_and_theme_changes_are_flagged() -> None:
    after = _summary(
        siteurl="http://evil.example",
        home="http://evil.example",
        activePlugins=["x/x.php"],
        theme={"stylesheet": "other", "template": "other"},
    )
    diff = diff_summaries(_summary(), after)
    assert sorted(_codes(diff)) == ["active-plugins-changed", "home-changed", "siteurl-changed", "theme-changed"]
    assert diff.activePlugins is not None and diff.activePlugins.after == ["x/x.php"]
    assert "activated x/x.php" in next(r.message for r in diff.risks if r.code == "active-plugins-changed")


def test_cron_event_added_is_flagged_but_a_rescheduled_recurring_event_is_not() -> None:
    moved = [{"hook": "wp_version_check", "timestamp": 43300, "schedule": "twicedaily", "argsSha256": "f" * 64}]
    assert diff_summaries(_summary(), _summary(cron=moved)).empty
    added = [*moved, {"hook": "evil_ping", "timestamp": 50, "schedule": None, "argsSha256": "f" * 64}]
    diff = diff_summaries(_summary(), _summary(cron=added))
    assert [(c.hook, c.status) for c in diff.cron] == [("evil_ping", "added")]
    assert _codes(diff) == ["cron-event-added"]


def test_rewrite_rules_added_and_removed() -> None:
    diff = diff_summaries(_summary(), _summary(rewriteRules=["^shop/?$"]))
    assert diff.rewriteRulesAdded == ["^shop/?$"] and diff.rewriteRulesRemoved == ["^page/?$"]


def test_truncated_sections_mark_the_diff_incomplete() -> None:
    diff = diff_summaries(_summary(truncated=["posts"]), _summary())
    assert diff.incomplete == ["posts"]


def test_control_files_added_changed_deleted_are_flagged_by_where_they_run() -> None:
    before = _summary(
        controlFiles={
            "/internal/shared/auto_prepend_file.php": "sha256:" + "1" * 64,
            "/internal/shared/php.ini": "sha256:" + "2" * 64,
            "/wordpress/wp-content/db.php": "sha256:" + "3" * 64,
        }
    )
    after = _summary(
        controlFiles={
            "/internal/shared/auto_prepend_file.php": "sha256:" + "9" * 64,
            "/internal/shared/preload/zz.php": "sha256:" + "4" * 64,
            "/wordpress/wp-content/db.php": "sha256:" + "3" * 64,
            "/wordpress/wp-content/object-cache.php": "link:/tmp/x.php",
        }
    )
    diff = diff_summaries(before, after)
    assert [(c.path, c.status) for c in diff.controlFiles] == [
        ("/internal/shared/auto_prepend_file.php", "changed"),
        ("/internal/shared/php.ini", "deleted"),
        ("/internal/shared/preload/zz.php", "added"),
        ("/wordpress/wp-content/object-cache.php", "added"),
    ]
    flags = {(r.subject, r.severity) for r in diff.risks if r.code == "sandbox-control-file-modified"}
    assert flags == {
        ("/internal/shared/auto_prepend_file.php", "high"),
        ("/internal/shared/php.ini", "high"),
        ("/internal/shared/preload/zz.php", "high"),
        ("/wordpress/wp-content/object-cache.php", "high"),
    }
    assert not diff.empty


def test_a_changed_wp_config_or_extra_database_file_is_a_high_database_configuration_flag() -> None:
    before = _summary(
        controlFiles={"/wordpress/wp-config.php": "sha256:" + "1" * 64, "/wordpress/wp-includes/": "tree:" + "2" * 64}
    )
    after = _summary(
        controlFiles={
            "/wordpress/wp-config.php": "sha256:" + "9" * 64,
            "/wordpress/wp-includes/": "tree:" + "3" * 64,
            "/wordpress/wp-content/database/copy.sqlite": "sha256:" + "4" * 64,
        }
    )
    risks = {(r.code, r.subject, r.severity) for r in diff_summaries(before, after).risks}
    assert risks == {
        ("database-configuration-changed", "/wordpress/wp-config.php", "high"),
        ("database-configuration-changed", "/wordpress/wp-content/database/copy.sqlite", "high"),
        ("sandbox-control-file-modified", "/wordpress/wp-includes/", "high"),
    }


def test_a_summary_that_cannot_be_taken_is_a_high_unavailable_diff() -> None:
    from codebox_tui.lifecycle.site_state import risk_flag_names, unavailable_diff

    diff = unavailable_diff("after: site-state summary: no such table")
    assert not diff.empty and [(r.code, r.severity) for r in diff.risks] == [("summary-unavailable", "high")]
    assert "no such table" in diff.risks[0].message
    assert risk_flag_names(diff) == ["site-state:summary-unavailable"]


def test_unchanged_control_files_are_not_a_change() -> None:
    files = {"/internal/shared/php.ini": "sha256:" + "2" * 64, "/wordpress/wp-content/mu-plugins": "dir"}
    diff = diff_summaries(_summary(controlFiles=files), _summary(controlFiles=dict(files)))
    assert diff.empty and not diff.controlFiles and not diff.risks


def test_only_exactly_what_codebox_wrote_is_excused_from_the_control_file_diff() -> None:
    """Attribution (docs/site-state.md): a control file Codebox's set-up wrote is excused while it holds exactly
    the declared bytes, with the folder made for it; other content under the same name, or another file, stays."""
    from codebox_tui.runtime.site_state_diff import file_digest, without_setup_writes

    loader, planted = b"<?php require_once 'x';\n", b"<?php // planted\n"
    mu = "/wordpress/wp-content/mu-plugins"
    writes = {
        f"{mu}/codebox-load-a.php": file_digest(loader),
        f"{mu}/codebox-load-b.php": file_digest(loader),
        mu: "dir",
        "/wordpress/wp-content/db.php": file_digest(loader),
    }
    before = _summary(controlFiles={"/wordpress/wp-content/db.php": "sha256:" + "1" * 64})
    after = _summary(
        controlFiles={
            mu: "dir",
            f"{mu}/codebox-load-a.php": file_digest(loader),
            f"{mu}/codebox-load-b.php": file_digest(planted),
            f"{mu}/evil.php": "sha256:" + "2" * 64,
            "/wordpress/wp-content/db.php": file_digest(loader),
        }
    )
    excused_after, excused = without_setup_writes(before, after, writes)
    assert excused == ["/wordpress/wp-content/db.php", mu, f"{mu}/codebox-load-a.php"]
    diff = diff_summaries(before, excused_after)
    assert {(c.path, c.status) for c in diff.controlFiles} == {
        (f"{mu}/codebox-load-b.php", "added"),
        (f"{mu}/evil.php", "added"),
    }
    # written and removed: in neither summary, nothing to excuse
    assert without_setup_writes(_summary(), _summary(), writes)[1] == []


def test_control_file_changes_keep_the_verdict_from_being_clean() -> None:
    from codebox_tui.lifecycle.site_state import unclean_risks, unclean_text

    before = _summary(controlFiles={})
    after = _summary(
        controlFiles={
            "/wordpress/wp-content/object-cache.php": "sha256:" + "1" * 64,
            "/wordpress/.user.ini": "sha256:" + "2" * 64,
        }
    )
    diff = diff_summaries(before, after)
    assert unclean_risks(diff) == ["sandbox-control-file-modified"]
    assert unclean_text(diff) == (
        "sandbox-control-file-modified (/wordpress/.user.ini, /wordpress/wp-content/object-cache.php)"
    )
    assert unclean_risks(diff_summaries(before, before)) == [] and unclean_text(None) == ""
