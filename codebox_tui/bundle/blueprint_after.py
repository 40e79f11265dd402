"""``blueprint.after.json``: the site's state after a run, as Playground blueprint steps, as far as the
site-state diff knows it (docs/site-state.md, "The site after the run as a blueprint").

Pure: a :class:`SiteStateDiff` in, a blueprint and its notes out. Everything in the diff came from the sandbox,
so no value is ever spliced into PHP source: a ``runPHP`` step carries its data as base64 JSON that the step's
fixed code decodes. What the diff cannot express as a step (posts, terms, tables, cron, roles, deleted users,
option values it only knows in part or serialized) is listed in the notes' ``limitations``.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any, Final

from codebox_tui.contracts.site_state import SiteStateDiff

BLUEPRINT_SCHEMA_URL: Final = "https://playground.wordpress.net/blueprint-schema.json"
# options that belong to where the site runs, never replayed
SITE_LOCAL_OPTIONS: Final = frozenset(
    {
        "siteurl",
        "home",
        "cron",
        "rewrite_rules",
        "active_plugins",
        "template",
        "stylesheet",
        "db_version",
        "initial_db_version",
    }
)
_SERIALIZED = re.compile(r"^(?:[aOsCidb]:|N;)")
_FOLDER_PATH = re.compile(r"[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)?")  # a plugin file or theme folder, no '..'


def _folder_path(value: str) -> bool:
    return bool(_FOLDER_PATH.fullmatch(value)) and ".." not in value


# Each runPHP step's fixed code; its data is the base64 JSON after ``$data = `` (never site text in the code).
RUN_PHP_CODE: Final = {
    "delete-options": "foreach ($data as $name) { delete_option($name); }",
    "add-users": (
        "foreach ($data as $u) { $id = wp_insert_user(['user_login' => $u['login'], "
        "'user_pass' => wp_generate_password(24), 'role' => '']); if (is_wp_error($id)) { continue; } "
        "$user = new WP_User($id); foreach ($u['capabilities'] as $cap) { $user->add_cap($cap); } }"
    ),
    "deactivate-plugins": ("require_once ABSPATH . 'wp-admin/includes/plugin.php'; deactivate_plugins($data);"),
}


def _run_php(kind: str, data: Any) -> dict[str, Any]:
    payload = base64.b64encode(json.dumps(data, sort_keys=True).encode("utf-8")).decode("ascii")
    code = (
        f"<?php require_once '/wordpress/wp-load.php'; $data = json_decode(base64_decode('{payload}'), true); "
        f"{RUN_PHP_CODE[kind]}"
    )
    return {"step": "runPHP", "code": code}


def blueprint_after(
    diff: SiteStateDiff, *, wordpress_version: str | None, php_version: str | None
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The blueprint and its notes for a run that changed the site; None when the diff is empty or unavailable."""
    if diff.empty or any(risk.code == "summary-unavailable" for risk in diff.risks):
        return None
    steps: list[dict[str, Any]] = []
    limitations: list[str] = []
    options: dict[str, str] = {}
    deleted: list[str] = []
    for change in diff.options:
        if change.name in SITE_LOCAL_OPTIONS:
            continue
        if change.status == "deleted":
            deleted.append(change.name)
        elif change.redacted or change.after is None:
            limitations.append(f"option {change.name}: its value is not recorded (secret-like name or not UTF-8)")
        elif change.afterBytes != len(change.after.encode("utf-8")):
            limitations.append(f"option {change.name}: only the first {len(change.after)} characters are recorded")
        elif _SERIALIZED.match(change.after):
            limitations.append(f"option {change.name}: a serialized value (set it from PHP)")
        else:
            options[change.name] = change.after
    if options:
        steps.append({"step": "setSiteOptions", "options": options})
    if deleted:
        steps.append(_run_php("delete-options", deleted))
    added = [{"login": u.login, "capabilities": u.capabilitiesAdded} for u in diff.users if u.status == "added"]
    if added:
        steps.append(_run_php("add-users", added))
    limitations += [f"user {u.login}: {u.status} (not replayed)" for u in diff.users if u.status != "added"]
    if diff.activePlugins is not None:
        before = [p for p in _names(diff.activePlugins.before) if _folder_path(p)]
        after = [p for p in _names(diff.activePlugins.after) if _folder_path(p)]
        steps += [
            {"step": "activatePlugin", "pluginPath": f"/wordpress/wp-content/plugins/{plugin}"}
            for plugin in after
            if plugin not in before
        ]
        gone = [plugin for plugin in before if plugin not in after]
        if gone:
            steps.append(_run_php("deactivate-plugins", gone))
    if diff.theme is not None and isinstance(diff.theme.after, str) and _folder_path(diff.theme.after):
        steps.append({"step": "activateTheme", "themeFolderName": diff.theme.after})
    for what, count in (
        ("post", len(diff.posts)),
        ("term", len(diff.terms)),
        ("table", len(diff.tables)),
        ("cron event", len(diff.cron)),
        ("role", len(diff.roles)),
    ):
        if count:
            limitations.append(f"{count} {what} change(s): see files/site-state-diff.json (not replayed)")
    if diff.incomplete:
        limitations.append("the site-state summary was cut in: " + ", ".join(diff.incomplete))
    versions = {key: value for key, value in (("wp", wordpress_version), ("php", php_version)) if value}
    blueprint = {"$schema": BLUEPRINT_SCHEMA_URL, "landingPage": "/", "preferredVersions": versions, "steps": steps}
    notes = {
        "replayStatus": "partial",
        "source": "files/site-state-diff.json",
        "steps": len(steps),
        "limitations": limitations,
        "notCovered": [
            "files of the mounts (see files/patch.diff)",
            "uploads and other wp-content files",
            "posts, terms and custom tables",
        ],
    }
    return blueprint, notes


def _names(value: Any) -> list[str]:
    if isinstance(value, dict):
        value = list(value.values())
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []
