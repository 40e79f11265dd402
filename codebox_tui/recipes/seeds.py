"""Bounded site seeds: turn a fixture JSON plus its scopes into one PHP import for the sandbox.

Only what the scopes opt into is imported: posts/pages by ids, slugs, post types, statuses (at most
``maxRecords``, default 100), terms by taxonomy/slug, options strictly by the named allow-list, users
always anonymised (login/email/name replaced, no passwords), and the active plugins / theme when asked.
"""

from __future__ import annotations

import json
from typing import Any

from codebox_tui.contracts.recipe import SeedScope, SiteSeed
from codebox_tui.runtime.php_literal import php_string


def _match(record: dict[str, Any], scope: SeedScope, default_type: str | None = None) -> bool:
    if scope.ids and record.get("id") not in scope.ids:
        return False
    if scope.slugs and record.get("slug") not in scope.slugs:
        return False
    ptype = record.get("type", default_type)
    if scope.postTypes and ptype not in scope.postTypes:
        return False
    if scope.statuses and record.get("status", "publish") not in scope.statuses:
        return False
    if scope.taxonomies and record.get("taxonomy") not in scope.taxonomies:
        return False
    return not (scope.roles and record.get("role") not in scope.roles)


def select_records(data: dict[str, Any], seed: SiteSeed) -> dict[str, Any]:
    """The part of a fixture document the seed's scopes allow, plus included/excluded counts."""
    s = seed.scopes
    out: dict[str, Any] = {"posts": [], "terms": [], "options": {}, "users": [], "counts": {}}

    def take(key: str, scope: SeedScope | None, default_type: str | None) -> list[dict[str, Any]]:
        rows = [r for r in data.get(key, []) if isinstance(r, dict)]
        if scope is None:
            out["counts"][key] = {"included": 0, "excluded": len(rows)}
            return []
        chosen = [r for r in rows if _match(r, scope, default_type)][: scope.maxRecords or 100]
        out["counts"][key] = {"included": len(chosen), "excluded": len(rows) - len(chosen)}
        return chosen

    out["posts"] = [{**r, "type": r.get("type", "post")} for r in take("posts", s.posts, "post")]
    out["posts"] += [{**r, "type": "page"} for r in take("pages", s.pages, "page")]
    out["terms"] = take("terms", s.terms, None)
    raw_options = data.get("options")
    options: dict[str, Any] = raw_options if isinstance(raw_options, dict) else {}
    if s.options is not None:
        out["options"] = {k: v for k, v in options.items() if k in s.options.names}
    users = take("users", s.users, None)
    out["users"] = [
        {
            "login": f"seed-user-{n + 1}",
            "email": f"seed-user-{n + 1}@example.invalid",
            "display_name": f"Seed User {n + 1}",
            "role": u.get("role", "subscriber"),
        }
        for n, u in enumerate(users)
    ]
    if s.activePlugins and isinstance(data.get("activePlugins"), list):
        out["activePlugins"] = [p for p in data["activePlugins"] if isinstance(p, str)]
    if s.activeTheme and isinstance(data.get("activeTheme"), str):
        out["activeTheme"] = data["activeTheme"]
    return out


IMPORTER = r"""
$seed = json_decode(%s, true);
require_once ABSPATH . 'wp-admin/includes/plugin.php';
$report = ['posts' => 0, 'terms' => 0, 'options' => 0, 'users' => 0, 'errors' => []];
foreach ($seed['terms'] as $t) {
  $r = wp_insert_term($t['name'] ?? $t['slug'], $t['taxonomy'] ?? 'category', ['slug' => $t['slug'] ?? '']);
  if (is_wp_error($r)) { $report['errors'][] = $r->get_error_message(); } else { $report['terms']++; }
}
foreach ($seed['posts'] as $p) {
  $r = wp_insert_post(['post_title' => $p['title'] ?? '', 'post_content' => $p['content'] ?? '',
    'post_name' => $p['slug'] ?? '', 'post_type' => $p['type'] ?? 'post', 'post_status' => $p['status'] ?? 'publish'],
    true);
  if (is_wp_error($r)) { $report['errors'][] = $r->get_error_message(); } else { $report['posts']++; }
}
foreach ($seed['options'] as $k => $v) { update_option($k, $v); $report['options']++; }
foreach ($seed['users'] as $u) {
  $r = wp_insert_user(['user_login' => $u['login'], 'user_email' => $u['email'], 'display_name' => $u['display_name'],
    'role' => $u['role'], 'user_pass' => wp_generate_password(24)]);
  if (is_wp_error($r)) { $report['errors'][] = $r->get_error_message(); } else { $report['users']++; }
}
if (isset($seed['activePlugins'])) { foreach ($seed['activePlugins'] as $pl) { $r = activate_plugin($pl);
  if (is_wp_error($r)) { $report['errors'][] = $r->get_error_message(); } } }
if (isset($seed['activeTheme'])) { switch_theme($seed['activeTheme']); }
$report['counts'] = $seed['counts'];
echo json_encode($report);
"""


def site_seed_php(seed: SiteSeed, data: dict[str, Any]) -> str:
    selected = select_records(data, seed)
    return IMPORTER % php_string(json.dumps(selected))
