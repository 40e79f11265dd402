"""The site-state diff: what changed between two site-state summaries, with risk flags.

Pure logic over :class:`SiteStateSummary` models (no sandbox); docs/site-state.md lists what is
compared and which changes raise which flag.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Final, Literal

from codebox_tui.contracts.site_state import (
    ControlFileChange,
    CronChange,
    OptionChange,
    RecordChange,
    RiskFlag,
    RoleChange,
    SiteStateDiff,
    SiteStateSummary,
    TableChange,
    UserChange,
    ValueChange,
)

# Option names whose values are never shown (docs/site-state.md, "Redaction"): keys, salts,
# passwords, tokens, secrets, nonces, hashes, credentials, sessions.
SECRET_NAME: Final = re.compile(
    r"(pass(word|wd)?|secret|(^|[_-])keys?($|[_-])|api[_-]?key|salt|token|nonce|auth|credential|private|"
    r"(^|[_-])hash($|[_-])|session|license)",
    re.IGNORECASE,
)
# The same rule for PHP's preg_match (the export's options section).
SECRET_NAME_PHP: Final = "/" + SECRET_NAME.pattern.replace("/", "\\/") + "/i"

# Capabilities whose grant is as good as an administrator's (a role or user gaining one is flagged high).
ADMIN_CAPABILITIES: Final = frozenset(
    {
        "administrator",
        "manage_options",
        "activate_plugins",
        "install_plugins",
        "edit_plugins",
        "update_plugins",
        "delete_plugins",
        "edit_themes",
        "install_themes",
        "switch_themes",
        "edit_users",
        "create_users",
        "delete_users",
        "promote_users",
        "unfiltered_html",
        "unfiltered_upload",
        "manage_network",
        "edit_files",
        "update_core",
    }
)


def is_secret_name(name: str) -> bool:
    return SECRET_NAME.search(name) is not None


def redact_summary(summary: SiteStateSummary) -> SiteStateSummary:
    """Drop the value previews of secret-like options (the sandbox's own redaction is not trusted)."""
    options = {
        name: state.model_copy(update={"preview": None, "redacted": True}) if is_secret_name(name) else state
        for name, state in summary.options.items()
    }
    return summary.model_copy(update={"options": options})


def _options(before: SiteStateSummary, after: SiteStateSummary) -> list[OptionChange]:
    out: list[OptionChange] = []
    for name in sorted(before.options.keys() | after.options.keys()):
        old, new = before.options.get(name), after.options.get(name)
        if old is not None and new is not None and old.sha256 == new.sha256:
            continue
        secret = is_secret_name(name)
        status = "added" if old is None else "deleted" if new is None else "changed"
        out.append(
            OptionChange(
                name=name,
                status=status,
                redacted=secret,
                before=None if secret or old is None else old.preview,
                after=None if secret or new is None else new.preview,
                beforeBytes=old.bytes if old else None,
                afterBytes=new.bytes if new else None,
            )
        )
    return out


def _tables(before: SiteStateSummary, after: SiteStateSummary) -> list[TableChange]:
    out: list[TableChange] = []
    for name in sorted(before.tables.keys() | after.tables.keys()):
        old, new = before.tables.get(name), after.tables.get(name)
        if old is None and new is not None:
            out.append(TableChange(name=name, status="created", columnsAdded=new.columns, rowsAfter=new.rows))
        elif new is None and old is not None:
            out.append(TableChange(name=name, status="dropped", columnsRemoved=old.columns, rowsBefore=old.rows))
        elif old is not None and new is not None:
            if old.sha256 != new.sha256 or old.columns != new.columns:
                out.append(
                    TableChange(
                        name=name,
                        status="altered",
                        rowsBefore=old.rows,
                        rowsAfter=new.rows,
                        columnsAdded=[c for c in new.columns if c not in old.columns],
                        columnsRemoved=[c for c in old.columns if c not in new.columns],
                    )
                )
            elif old.rows != new.rows:
                out.append(TableChange(name=name, status="rows-changed", rowsBefore=old.rows, rowsAfter=new.rows))
    return out


def _posts(before: SiteStateSummary, after: SiteStateSummary) -> list[RecordChange]:
    out: list[RecordChange] = []
    for key in sorted(before.posts.keys() | after.posts.keys(), key=_numeric):
        old, new = before.posts.get(key), after.posts.get(key)
        if old is not None and new is not None and old.sha256 == new.sha256:
            continue
        record = new or old
        assert record is not None
        status = "added" if old is None else "deleted" if new is None else "changed"
        out.append(RecordChange(id=key, status=status, kind=record.type, label=record.title or record.name or key))
    return out


def _terms(before: SiteStateSummary, after: SiteStateSummary) -> list[RecordChange]:
    out: list[RecordChange] = []
    for key in sorted(before.terms.keys() | after.terms.keys(), key=_numeric):
        old, new = before.terms.get(key), after.terms.get(key)
        if old is not None and new is not None and old.sha256 == new.sha256:
            continue
        record = new or old
        assert record is not None
        status = "added" if old is None else "deleted" if new is None else "changed"
        out.append(RecordChange(id=key, status=status, kind=record.taxonomy, label=record.name or record.slug))
    return out


def _numeric(key: str) -> tuple[int, str]:
    return (int(key), "") if key.isdigit() else (-1, key)


def _users(before: SiteStateSummary, after: SiteStateSummary) -> list[UserChange]:
    out: list[UserChange] = []
    for key in sorted(before.users.keys() | after.users.keys(), key=_numeric):
        old, new = before.users.get(key), after.users.get(key)
        old_caps = set(old.capabilities) if old else set()
        new_caps = set(new.capabilities) if new else set()
        if old is not None and new is not None and old_caps == new_caps and old.login == new.login:
            continue
        status = "added" if old is None else "deleted" if new is None else "changed"
        login = (new or old).login  # type: ignore[union-attr]
        out.append(
            UserChange(
                id=key,
                login=login,
                status=status,
                capabilitiesAdded=sorted(new_caps - old_caps),
                capabilitiesRemoved=sorted(old_caps - new_caps),
            )
        )
    return out


def _roles(before: SiteStateSummary, after: SiteStateSummary) -> list[RoleChange]:
    out: list[RoleChange] = []
    for role in sorted(before.roles.keys() | after.roles.keys()):
        old, new = before.roles.get(role), after.roles.get(role)
        if old is not None and new is not None and set(old) == set(new):
            continue
        status = "added" if old is None else "deleted" if new is None else "changed"
        out.append(
            RoleChange(
                role=role,
                status=status,
                capabilitiesAdded=sorted(set(new or []) - set(old or [])),
                capabilitiesRemoved=sorted(set(old or []) - set(new or [])),
            )
        )
    return out


def _cron(before: SiteStateSummary, after: SiteStateSummary) -> list[CronChange]:
    """Events by (hook, schedule, args); a recurring event that only moved to its next run is not a change."""

    def keyed(summary: SiteStateSummary) -> dict[tuple[str, str, str], list[int]]:
        out: dict[tuple[str, str, str], list[int]] = {}
        for event in summary.cron:
            out.setdefault((event.hook, event.schedule or "", event.argsSha256), []).append(event.timestamp)
        return out

    old, new = keyed(before), keyed(after)
    changes: list[CronChange] = []
    for key in sorted(old.keys() | new.keys()):
        hook, schedule, _ = key
        was, now = sorted(old.get(key, [])), sorted(new.get(key, []))
        if schedule and len(was) == len(now):
            continue
        if not schedule and was == now:
            continue
        if schedule:
            for timestamp in now[len(was) :]:
                changes.append(CronChange(hook=hook, status="added", schedule=schedule, timestamp=timestamp))
            for timestamp in was[len(now) :]:
                changes.append(CronChange(hook=hook, status="removed", schedule=schedule, timestamp=timestamp))
            continue
        for timestamp in sorted(set(now) - set(was)):
            changes.append(CronChange(hook=hook, status="added", timestamp=timestamp))
        for timestamp in sorted(set(was) - set(now)):
            changes.append(CronChange(hook=hook, status="removed", timestamp=timestamp))
    return changes


def _control_files(before: SiteStateSummary, after: SiteStateSummary) -> list[ControlFileChange]:
    out = []
    for path in sorted(set(before.controlFiles) | set(after.controlFiles)):
        old, new = before.controlFiles.get(path), after.controlFiles.get(path)
        if old != new:
            status: Literal["added", "changed", "deleted"] = (
                "added" if old is None else "deleted" if new is None else "changed"
            )
            out.append(ControlFileChange(path=path, status=status, before=old, after=new))
    return out


def _value(old: object, new: object) -> ValueChange | None:
    return None if old == new else ValueChange(before=old, after=new)


def _risks(diff: SiteStateDiff, before: SiteStateSummary, after: SiteStateSummary) -> list[RiskFlag]:
    risks: list[RiskFlag] = []
    for user in diff.users:
        if "administrator" in user.capabilitiesAdded:
            what = "new administrator" if user.status == "added" else "user made administrator"
            risks.append(
                RiskFlag(
                    code="new-administrator",
                    severity="high",
                    subject=user.login,
                    message=f"{what}: {user.login} (id {user.id})",
                )
            )
        granted = [c for c in user.capabilitiesAdded if c != "administrator"]
        strong = any(c in ADMIN_CAPABILITIES for c in granted)
        if granted and (user.status == "changed" or strong):  # a new plain subscriber is not a risk
            risks.append(
                RiskFlag(
                    code="capabilities-granted",
                    severity="high" if strong else "medium",
                    subject=user.login,
                    message=f"user {user.login} granted: {', '.join(granted)}",
                )
            )
    for role in diff.roles:
        if role.capabilitiesAdded:
            strong = any(c in ADMIN_CAPABILITIES for c in role.capabilitiesAdded)
            risks.append(
                RiskFlag(
                    code="capabilities-granted",
                    severity="high" if strong else "medium",
                    subject=role.role,
                    message=f"role {role.role} {'created with' if role.status == 'added' else 'granted'}"
                    f": {', '.join(role.capabilitiesAdded)}",
                )
            )
    if diff.siteurl is not None:
        risks.append(
            RiskFlag(
                code="siteurl-changed",
                severity="high",
                subject="siteurl",
                message=f"siteurl changed from {before.siteurl!r} to {after.siteurl!r}",
            )
        )
    if diff.home is not None:
        risks.append(
            RiskFlag(
                code="home-changed",
                severity="high",
                subject="home",
                message=f"home changed from {before.home!r} to {after.home!r}",
            )
        )
    if diff.activePlugins is not None:
        added = [p for p in after.activePlugins if p not in before.activePlugins]
        removed = [p for p in before.activePlugins if p not in after.activePlugins]
        parts = ([f"activated {', '.join(added)}"] if added else []) + (
            [f"deactivated {', '.join(removed)}"] if removed else []
        )
        risks.append(
            RiskFlag(
                code="active-plugins-changed",
                severity="medium",
                subject="active_plugins",
                message="active plugins changed: " + ("; ".join(parts) or "order changed"),
            )
        )
    if diff.theme is not None:
        risks.append(
            RiskFlag(
                code="theme-changed",
                severity="medium",
                subject="stylesheet",
                message=f"theme changed from {before.theme.stylesheet} to {after.theme.stylesheet}",
            )
        )
    for event in diff.cron:
        if event.status == "added":
            risks.append(
                RiskFlag(
                    code="cron-event-added",
                    severity="medium",
                    subject=event.hook,
                    message=f"cron event {event.hook} scheduled"
                    + (f" ({event.schedule})" if event.schedule else " (once)"),
                )
            )
    for change in diff.controlFiles:
        risks.append(control_file_risk(change.path, change.status))
    return risks


def control_file_risk(path: str, status: str) -> RiskFlag:
    """The risk flag of one changed control file (docs/site-state.md, "Files outside the mounts"), always high:
    each of them decides what the site runs or which database it uses. wp-config.php (where DB_FILE, DB_DIR,
    DB_ENGINE and the table prefix are defined) and an extra SQLite file beside the site's database mean the
    site may read another database than the one summarized."""
    if path == "/wordpress/wp-config.php" or path.startswith("/wordpress/wp-content/database/"):
        return RiskFlag(
            code="database-configuration-changed",
            severity="high",
            subject=path,
            message=f"{path} {status}: the site may now use another database than the one summarized",
        )
    if path.startswith("/internal/"):
        what = "sandbox control file"  # /internal/shared runs before every request (docs/security.md)
    elif path.startswith(("/wordpress/wp-includes/", "/wordpress/wp-admin/")):
        what = "WordPress core folder"
    elif path.startswith("/wordpress/wp-content/"):
        what = "drop-in or mu-plugin"
    else:
        what = "site root file"
    return RiskFlag(
        code="sandbox-control-file-modified", severity="high", subject=path, message=f"{what} {path} {status}"
    )


def file_digest(data: bytes) -> str:
    """A control file's digest as the summary records it (``cbs_file_digest`` in runtime/php/site_state.php)."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


DIRECTORY_DIGEST: Final = "dir"  # a folder in ``controlFiles`` (cbs_file_digest)


def without_setup_writes(
    before: SiteStateSummary, after: SiteStateSummary, writes: Mapping[str, str]
) -> tuple[SiteStateSummary, list[str]]:
    """``after`` with the control files Codebox's own set-up wrote put back to their ``before`` state, and the
    paths so excused (docs/site-state.md, "Attribution"). ``writes`` maps each path Codebox wrote to the digest
    of exactly what it wrote; a path is excused only while it still holds that digest, so the same name with
    other content (the code under review overwrote it) stays a change. A file Codebox wrote and removed is in
    neither summary and needs no excuse."""
    files = dict(after.controlFiles)
    excused = []
    for path, digest in writes.items():
        if files.get(path) != digest or before.controlFiles.get(path) == digest:
            continue
        old = before.controlFiles.get(path)
        if old is None:
            del files[path]
        else:
            files[path] = old
        excused.append(path)
    return after.model_copy(update={"controlFiles": files}), sorted(excused)


def diff_summaries(before: SiteStateSummary, after: SiteStateSummary) -> SiteStateDiff:
    """The site-state diff from ``before`` to ``after`` (docs/site-state.md)."""
    diff = SiteStateDiff(
        before=before.takenAt,
        after=after.takenAt,
        incomplete=sorted(set(before.truncated) | set(after.truncated)),
        options=_options(before, after),
        tables=_tables(before, after),
        posts=_posts(before, after),
        terms=_terms(before, after),
        users=_users(before, after),
        roles=_roles(before, after),
        cron=_cron(before, after),
        rewriteRulesAdded=sorted(set(after.rewriteRules) - set(before.rewriteRules)),
        rewriteRulesRemoved=sorted(set(before.rewriteRules) - set(after.rewriteRules)),
        activePlugins=_value(before.activePlugins, after.activePlugins),
        theme=_value(before.theme.model_dump(), after.theme.model_dump()),
        siteurl=_value(before.siteurl, after.siteurl),
        home=_value(before.home, after.home),
        controlFiles=_control_files(before, after),
        empty=False,
    )
    diff.risks = _risks(diff, before, after)
    diff.empty = not any(
        (
            diff.options,
            diff.tables,
            diff.posts,
            diff.terms,
            diff.users,
            diff.roles,
            diff.cron,
            diff.rewriteRulesAdded,
            diff.rewriteRulesRemoved,
            diff.activePlugins,
            diff.theme,
            diff.siteurl,
            diff.home,
            diff.controlFiles,
        )
    )
    return diff
