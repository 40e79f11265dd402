"""The site-state diff as text, one line per change, for ``codebox artifacts show`` and the Review screen's
Site tab (docs/site-state.md): risks first, then options, tables, users, roles, cron, posts, terms, rewrite
rules and the site's settings. Every value was written by the sandbox, so every line is made terminal-safe
here with :func:`~codebox_tui.textsafe.safe_text` (escape sequences and control characters are shown as
escapes, never sent to the terminal).
"""

from __future__ import annotations

import json
from typing import Any

from codebox_tui.contracts.site_state import SiteStateDiff, ValueChange
from codebox_tui.textsafe import safe_text

MAX_VALUE_CHARS = 80  # one option value as shown (the diff keeps a 200-byte preview)

_MARK = {
    "added": "+",
    "created": "+",
    "changed": "~",
    "altered": "~",
    "rows-changed": "~",
    "deleted": "-",
    "dropped": "-",
    "removed": "-",
}


def site_state_counts(diff: SiteStateDiff) -> dict[str, int]:
    """How many changes per category (the ``--json`` summary and the tab's heading)."""
    return {
        "risks": len(diff.risks),
        "options": len(diff.options),
        "tables": len(diff.tables),
        "users": len(diff.users),
        "roles": len(diff.roles),
        "cron": len(diff.cron),
        "posts": len(diff.posts),
        "terms": len(diff.terms),
        "rewriteRules": len(diff.rewriteRulesAdded) + len(diff.rewriteRulesRemoved),
        "settings": sum(v is not None for v in (diff.activePlugins, diff.theme, diff.siteurl, diff.home)),
        "controlFiles": len(diff.controlFiles),
        "filesOutsideMounts": len(diff.filesOutsideMounts),
    }


def counts_line(diff: SiteStateDiff) -> str:
    counts = site_state_counts(diff)
    if diff.empty:
        return "no changes to the site's database"
    if any(r.code == "summary-unavailable" for r in diff.risks):
        return "UNKNOWN: the site-state summary could not be computed (see Risks)"
    return ", ".join(f"{n} {name}" for name, n in counts.items() if n)


def _s(value: object) -> str:
    text = safe_text(value)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def _json_value(value: Any) -> str:
    return _s(value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False))


def _caps(added: list[str], removed: list[str]) -> str:
    parts = [f"+{_s(c)}" for c in added] + [f"-{_s(c)}" for c in removed]
    return f" ({' '.join(parts)})" if parts else ""


def _option(change: Any) -> str:
    head = f"  {_MARK[change.status]} {_s(change.name)}"
    if change.redacted:
        size = change.afterBytes if change.afterBytes is not None else change.beforeBytes
        return f"{head}  (value redacted{f', {size} bytes' if size is not None else ''})"
    if change.status == "added":
        return f"{head} = {_s(change.after)}"
    if change.status == "deleted":
        return f"{head} (was {_s(change.before)})"
    return f"{head}: {_s(change.before)} → {_s(change.after)}"


def _table(change: Any) -> str:
    cols = [f"+{_s(c)}" for c in change.columnsAdded] + [f"-{_s(c)}" for c in change.columnsRemoved]
    rows = ""
    if change.rowsBefore is not None or change.rowsAfter is not None:
        rows = (
            f" rows {change.rowsBefore if change.rowsBefore is not None else '-'}→"
            f"{change.rowsAfter if change.rowsAfter is not None else '-'}"
        )
    columns = " (" + " ".join(cols) + ")" if cols else ""
    return f"  {_MARK[change.status]} {_s(change.name)} {change.status}{rows}{columns}"


def _setting(name: str, change: ValueChange | None) -> list[str]:
    return [] if change is None else [f"  ~ {name}: {_json_value(change.before)} → {_json_value(change.after)}"]


def site_state_lines(diff: SiteStateDiff) -> list[str]:
    """The whole diff as terminal-safe lines (section headings unindented, changes indented)."""
    lines = [f"Site state: {counts_line(diff)}"]
    if diff.incomplete:
        lines.append(f"  (incomplete: a row limit cut {', '.join(_s(s) for s in diff.incomplete)})")
    if diff.risks:
        lines.append("Risks")
        lines += [f"  {r.severity.upper():6} {r.code}  {_s(r.subject)} — {_s(r.message)}" for r in diff.risks]
    sections: list[tuple[str, list[str]]] = [
        ("Options", [_option(c) for c in diff.options]),
        ("Tables", [_table(c) for c in diff.tables]),
        (
            "Users",
            [
                f"  {_MARK[u.status]} {_s(u.login)} (id {_s(u.id)}){_caps(u.capabilitiesAdded, u.capabilitiesRemoved)}"
                for u in diff.users
            ],
        ),
        (
            "Roles",
            [
                f"  {_MARK[r.status]} {_s(r.role)}{_caps(r.capabilitiesAdded, r.capabilitiesRemoved)}"
                for r in diff.roles
            ],
        ),
        (
            "Cron",
            [f"  {_MARK[c.status]} {_s(c.hook)} ({_s(c.schedule or 'once')}, at {c.timestamp})" for c in diff.cron],
        ),
        ("Posts", [f"  {_MARK[p.status]} {_s(p.kind)} {_s(p.id)} {_s(p.label)}" for p in diff.posts]),
        ("Terms", [f"  {_MARK[t.status]} {_s(t.kind)} {_s(t.id)} {_s(t.label)}" for t in diff.terms]),
        (
            "Rewrite rules",
            [f"  + {_s(r)}" for r in diff.rewriteRulesAdded] + [f"  - {_s(r)}" for r in diff.rewriteRulesRemoved],
        ),
        (
            "Control files (run before or inside WordPress)",
            [f"  {_MARK[c.status]} {_s(c.path)} {c.status}" for c in diff.controlFiles],
        ),
        (
            "Settings",
            [
                *_setting("active_plugins", diff.activePlugins),
                *_setting("theme", diff.theme),
                *_setting("siteurl", diff.siteurl),
                *_setting("home", diff.home),
            ],
        ),
        (
            "Files outside the declared mounts",
            [
                f"  {_MARK[f.status]} {_s(f.path)} ({f.type}{'' if f.bytes is None else f', {f.bytes} bytes'})"
                for f in diff.filesOutsideMounts
            ],
        ),
    ]
    for title, items in sections:
        if items:
            lines += [title, *items]
    return lines
