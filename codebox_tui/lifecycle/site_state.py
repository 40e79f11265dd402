"""The site-state diff of every run (docs/site-state.md, "In every run"): a summary of the site's database
right after boot, another right before capture (while the sandbox is alive), and their diff written to the
bundle as ``files/site-state-diff.json`` with its risk flags added to the review's.

A summary or diff that cannot be computed (a command may have broken the database, or planted decoys to make
the summary fail) fails closed: the diff written is a high ``summary-unavailable`` risk flag with the reason,
so the review cannot read as clean (the run itself does not fail).

Control files Codebox's own set-up writes (a recipe's mu-plugin loaders and staged files, evaluate-patch's
error probe) are declared with the exact bytes written and left out of the diff while they hold those bytes
(docs/site-state.md, "Attribution"); every other control-file change is the code under review's and keeps the
verdict from reading as clean (:func:`unclean_risks`).
"""

from __future__ import annotations

import time

from codebox_tui.bundle import layout
from codebox_tui.bundle.blueprint_after import blueprint_after
from codebox_tui.contracts.canonical import pretty_json
from codebox_tui.contracts.site_state import FileOutsideMounts, RiskFlag, SiteStateDiff, SiteStateSummary
from codebox_tui.errors import SandboxError
from codebox_tui.runtime.content_listing import (
    Listing,
    changed_paths,
    list_content,
    skipped_paths,
    summary_and_listing,
)
from codebox_tui.runtime.core_files import MAX_CHANGES_FLAGGED, SITE_ROOT, HostCoreCheck
from codebox_tui.runtime.session import RunSession
from codebox_tui.runtime.site_state import take_summary
from codebox_tui.runtime.site_state_diff import DIRECTORY_DIGEST, diff_summaries, file_digest, without_setup_writes
from codebox_tui.textsafe import safe_text

SITE_STATE_DIFF_KIND = "site-state-diff"
MAX_FILES_LISTED = 500  # paths kept in the diff (the flag's message counts them all)
RISK_FLAG_PREFIX = "site-state:"  # review risk flag: site-state:<RiskFlag.code>


def risk_flag_names(diff: SiteStateDiff) -> list[str]:
    """The review risk flags a diff raises (one per risk code; the subjects are in the diff itself)."""
    return sorted({RISK_FLAG_PREFIX + risk.code for risk in diff.risks})


# High risks that keep a verdict from reading as clean (docs/site-state.md, "Verdicts"): the site's state could not
# be measured, wp-config.php (which decides the database the summary reads) changed, or a control file (a
# mu-plugin, a drop-in, a root file such as .htaccess or .user.ini, php.ini or the prepend, core) changed. Codebox's
# own set-up writes are attributed to their step before the diff (SiteStateRecorder.declare_setup_write), so what
# remains was written by the code under review.
# core-file-changed is the host's own comparison of core with the golden site (runtime/core_files.py).
UNCLEAN_RISKS = frozenset(
    {"summary-unavailable", "database-configuration-changed", "sandbox-control-file-modified", "core-file-changed"}
)


def unclean_flags(diff: SiteStateDiff | None) -> list[RiskFlag]:
    """The risks of ``diff`` that keep a run's verdict from being clean (none without a diff)."""
    if diff is None:
        return []
    return [r for r in diff.risks if r.severity == "high" and r.code in UNCLEAN_RISKS]


def unclean_risks(diff: SiteStateDiff | None) -> list[str]:
    """The risk codes of ``diff`` that keep a run's verdict from being clean (none without a diff)."""
    return sorted({r.code for r in unclean_flags(diff)})


def unclean_details(diff: SiteStateDiff | None) -> list[dict[str, str]]:
    """Each unclean risk with what it is about (``--json`` ``siteStateRiskDetails``; subjects are sandbox data,
    made terminal-safe where they are printed)."""
    return [{"code": r.code, "subject": r.subject, "message": r.message} for r in unclean_flags(diff)]


def unclean_text(diff: SiteStateDiff | None) -> str:
    """One line naming each unclean risk code and its subjects, e.g. ``sandbox-control-file-modified
    (/wordpress/wp-content/db.php)``; empty when the verdict may be clean."""
    subjects: dict[str, list[str]] = {}
    for risk in unclean_flags(diff):
        subjects.setdefault(risk.code, []).append(risk.subject)
    return "; ".join(
        f"{code} ({', '.join(safe_text(s) for s in names[:5])}"
        + (f", {len(names) - 5} more" if len(names) > 5 else "")
        + ")"
        for code, names in sorted(subjects.items())
    )


class SiteStateRecorder:
    """Takes the two summaries of one run and writes their diff. ``enabled`` is the setting
    ``CODEBOX_SITE_STATE``; a recorder whose first summary failed (or never ran) writes nothing."""

    def __init__(self, session: RunSession, *, enabled: bool = True) -> None:
        self.session = session
        self.enabled = enabled
        self.before: SiteStateSummary | None = None
        self.listing: Listing | None = None  # wp-content outside the mounts, after boot
        self._files: Listing | None = None  # the listing taken with the last summary (_summary's with_files)
        self.diff: SiteStateDiff | None = None
        self.failure: str | None = None  # why a summary could not be taken (phase: reason)
        self.seconds = 0.0  # time spent on the summaries and the diff (bench/bench_site_state.py)
        # control-file path -> digest of exactly what Codebox's own set-up wrote there (declare_setup_write)
        self.setup_writes: dict[str, str] = {}
        # core compared on the host, not by the sandbox (runtime/core_files.py); why it could not start
        self.core: HostCoreCheck | None = None
        self.core_failure: str | None = None
        self.core_start_ms = 0

    def _summary(self, phase: str, *, with_files: bool = False) -> SiteStateSummary | None:
        """The summary (None when it failed: a ``site-state.unavailable`` event). ``with_files`` also lists
        wp-content in the same probe process (:func:`summary_and_listing`) into ``self._files``."""
        started = time.monotonic()
        listing: tuple[Listing, bool] | SandboxError | None = None
        try:
            if with_files:
                summary, listing = summary_and_listing(self.session.sandbox, self._skipped())
            else:
                summary = take_summary(self.session.sandbox)
        except SandboxError as error:
            self.session.emit("site-state.unavailable", {"phase": phase, **error.to_dict()}, level="warning")
            self.failure = self.failure or f"{phase}: {error}"
            return None
        finally:
            self.seconds += time.monotonic() - started
        self.session.emit("site-state.summary", {"phase": phase, "timing": summary.timing})
        self._files = None if listing is None else self._listed(phase, listing)
        return summary

    def record_before(self) -> None:
        """Right after boot, before the first command (once)."""
        if self.enabled and self.before is None and self.session.booted:
            self._start_core_check()
            self.before = self._summary("before", with_files=True)
            if self.before is not None:
                self.listing = self._files

    def _start_core_check(self) -> None:
        started = time.monotonic()
        try:
            self.core = HostCoreCheck.start(self.session.sandbox)
        except (OSError, ValueError) as error:  # a golden site or sandbox folder the host cannot read
            self.core_failure = f"{type(error).__name__}: {error}"
        finally:
            self.core_start_ms = int((time.monotonic() - started) * 1000)
            self.seconds += time.monotonic() - started

    def declare_setup_write(self, path: str, data: bytes, step: str) -> None:
        """Codebox's own set-up wrote exactly ``data`` at sandbox ``path`` (a recipe's mu-plugin loader or staged
        file, evaluate-patch's error probe): the diff does not count that file as a control-file change while it
        holds exactly these bytes, nor the folders made for it (docs/site-state.md, "Attribution"). A later
        declaration of the same path replaces the earlier one."""
        self._declare(path, file_digest(data), step)

    def _declare(self, path: str, digest: str, step: str) -> None:
        self.setup_writes[path] = digest
        if self.core is not None:
            self.core.declare(path, digest)
        parent = path.rsplit("/", 1)[0]
        while parent.startswith("/wordpress/"):
            self.setup_writes.setdefault(parent, DIRECTORY_DIGEST)
            parent = parent.rsplit("/", 1)[0]
        self.session.emit("site-state.setup-write", {"step": step, "path": path, "digest": digest})

    def attribute_setup_phase(self, step: str, reviewed_code_ran: str | None) -> None:
        """A recipe's blueprint phase is the recipe author's declared set-up: the control files it left changed
        since boot are declared with their exact digests now, as if Codebox had written them (docs/site-state.md,
        "Attribution"), so only what changes them later counts as the run's. Not when code under review could
        have run in the phase (``reviewed_code_ran`` says why; a ``site-state.setup-not-attributed`` event): its
        writes stay changes. Files the phase deleted stay changes too (there is no digest to hold)."""
        if self.before is None:
            return
        if reviewed_code_ran is not None:
            self.session.emit("site-state.setup-not-attributed", {"step": step, "reason": reviewed_code_ran})
            return
        now = self._summary("setup")
        if now is None:
            return
        for path, digest in sorted(now.controlFiles.items()):
            if self.before.controlFiles.get(path) != digest:
                self._declare(path, digest, step)
        if self.core is not None:
            try:
                for path in self.core.attribute_changes():
                    self.session.emit("site-state.setup-write", {"step": step, "path": path, "digest": "core"})
            except (OSError, ValueError) as error:
                self.core_failure = f"{type(error).__name__}: {error}"
                self.core = None

    def write_setup_file(self, path: str, data: bytes, step: str, timeout_s: float = 60.0) -> None:
        """Write ``data`` at sandbox ``path`` as a step of Codebox's own set-up, declared first
        (:meth:`declare_setup_write`)."""
        self.declare_setup_write(path, data, step)
        self.session.sandbox.write_file(path, data, timeout_s)

    def rebase_summary(self, step: str) -> None:
        """Take the "before" summary again after a caller's own setup step (evaluate-patch activating the plugin
        under review): what the step changed in the database is attributed to it (a ``site-state.setup-step``
        event with its risk codes), and the run's diff counts only what the commands after it did. Control files
        keep their baseline from boot: the step runs the code under review (an activation hook), and Codebox's
        own control-file writes are excused exactly, by :meth:`declare_setup_write`."""
        if self.before is None:
            return
        setup = self._summary("setup")
        if setup is None:
            return
        changed = diff_summaries(self.before, setup)
        self.session.emit("site-state.setup-step", {"step": step, "risks": sorted({r.code for r in changed.risks})})
        self.before = setup.model_copy(update={"controlFiles": self.before.controlFiles})

    def rebase_files(self) -> None:
        """List wp-content again as the files' baseline: what a caller's own setup wrote there (a recipe's staged
        files, blueprint steps and extra-plugin loaders) is declared input, not something the run wrote."""
        if self.listing is not None:
            self.listing = self._listing("setup")

    def _skipped(self) -> list[str]:
        spec = self.session.spec
        return skipped_paths([*spec.mounts, *spec.extra_mounts])

    def _listing(self, phase: str) -> Listing | None:
        started = time.monotonic()
        try:
            listed: tuple[Listing, bool] | SandboxError = list_content(self.session.sandbox, self._skipped())
        except SandboxError as error:
            listed = error
        finally:
            self.seconds += time.monotonic() - started
        return self._listed(phase, listed)

    def _listed(self, phase: str, listed: tuple[Listing, bool] | SandboxError) -> Listing | None:
        """A listing's events: ``site-state.unavailable`` (part files) when it failed, ``site-state.files-truncated``
        when it was cut."""
        if isinstance(listed, SandboxError):
            self.session.emit(
                "site-state.unavailable", {"phase": phase, "part": "files", **listed.to_dict()}, level="warning"
            )
            return None
        listing, cut = listed
        if cut:
            self.session.emit("site-state.files-truncated", {"phase": phase, "entries": len(listing)}, level="warning")
        return listing

    def _with_files(self, diff: SiteStateDiff, after: Listing | None) -> SiteStateDiff:
        """The diff with the wp-content paths written outside the declared mounts, and their risk flag: high when
        one of them is PHP (code planted where no patch shows it), medium otherwise."""
        if self.listing is None or after is None:
            return diff
        changed = changed_paths(self.listing, after)
        if not changed:
            return diff
        php = [
            c["path"]
            for c in changed
            if c["status"] != "deleted" and c["path"].lower().endswith((".php", ".phtml", ".phar"))
        ]
        subject = php[0] if php else changed[0]["path"]
        risk = RiskFlag(
            code="files-outside-mounts",
            severity="high" if php else "medium",
            subject=subject,
            message=f"{len(changed)} path(s) under wp-content outside the declared mounts were written"
            + (f", {len(php)} of them PHP" if php else "")
            + "; they are not in the patch",
        )
        return diff.model_copy(
            update={
                "filesOutsideMounts": [FileOutsideMounts.model_validate(c) for c in changed[:MAX_FILES_LISTED]],
                "risks": [*diff.risks, risk],
                "empty": False,
            }
        )

    def _with_core(self, diff: SiteStateDiff) -> SiteStateDiff:
        """The diff with a high ``core-file-changed`` flag per core file whose bytes the host found changed (the
        sandbox's word is not asked); fail closed when the host could not compare."""
        if self.core is None and self.core_failure is None:
            return diff
        started = time.monotonic()
        failure = self.core_failure
        changes = []
        if self.core is not None:
            try:
                changes = self.core.changes()
            except (OSError, ValueError) as error:
                failure = f"{type(error).__name__}: {error}"
        self.seconds += time.monotonic() - started
        self.session.emit(
            "site-state.core-compared",
            {
                "startMs": self.core_start_ms,
                "ms": int((time.monotonic() - started) * 1000),
                "changed": len(changes),
                **({"failure": failure} if failure else {}),
            },
        )
        if failure is not None:
            risks = [
                RiskFlag(
                    code="core-file-changed",
                    severity="high",
                    subject=SITE_ROOT,
                    message=f"WordPress core could not be compared on the host ({failure[:300]}): "
                    "whether the run changed it is unknown",
                )
            ]
        else:
            risks = [
                RiskFlag(
                    code="core-file-changed",
                    severity="high",
                    subject=f"{SITE_ROOT}/{change.path}",
                    message=f"core file {SITE_ROOT}/{change.path} {change.status} (compared on the host "
                    "with the golden site)"
                    + (f"; {len(changes)} core paths in all" if index == 0 and len(changes) > 1 else ""),
                )
                for index, change in enumerate(changes[:MAX_CHANGES_FLAGGED])
            ]
        if not risks:
            return diff
        return diff.model_copy(update={"risks": [*diff.risks, *risks], "empty": False})

    def record_after(self) -> SiteStateDiff | None:
        """Right before capture: the second summary, the diff as evidence and its risk flags for the
        review. Nothing when the sandbox is gone or no summary was tried; a summary or diff that failed is
        written as an unavailable diff (fail closed)."""
        if self.diff is not None or not self.session.booted or (self.before is None and self.failure is None):
            return None
        after = self._summary("after", with_files=self.listing is not None) if self.before is not None else None
        files_after = self._files if self.listing is not None and after is not None else None
        started = time.monotonic()
        diff = None
        if self.before is not None and after is not None:
            try:
                after, excused = without_setup_writes(self.before, after, self.setup_writes)
                if excused:
                    self.session.emit("site-state.setup-writes-excused", {"paths": excused})
                diff = self._with_files(diff_summaries(self.before, after), files_after)
            except (ValueError, TypeError, KeyError) as error:  # sandbox-shaped data the diff could not take
                self.failure = f"diff: {type(error).__name__}: {str(error)[:300]}"
        if diff is None:
            diff = unavailable_diff(self.failure or "unknown reason")
        diff = self._with_core(diff)
        doc = diff.model_dump(mode="json", by_alias=True, exclude_none=True)
        path = self.session.add_evidence(layout.SITE_STATE_DIFF, SITE_STATE_DIFF_KIND, "application/json")
        path.write_text(self.session.redact(pretty_json(doc)), encoding="utf-8")
        self.session.extra_risk_flags.extend(risk_flag_names(diff))
        self.seconds += time.monotonic() - started
        self.session.emit("site-state.diff", {"empty": diff.empty, "risks": [r.code for r in diff.risks]})
        self._write_blueprint_after(diff)
        self.diff = diff
        return diff

    def _write_blueprint_after(self, diff: SiteStateDiff) -> None:
        """``blueprint.after.json`` and its notes when the run changed the site (docs/site-state.md)."""
        sandbox = self.session.sandbox
        built = blueprint_after(
            diff, wordpress_version=sandbox.wordpress_version or None, php_version=sandbox.php_version or None
        )
        if built is None:
            return
        for rel, kind, doc in (
            (layout.BLUEPRINT_AFTER, "blueprint-after", built[0]),
            (layout.BLUEPRINT_AFTER_NOTES, "blueprint-after-notes", built[1]),
        ):
            path = self.session.add_evidence(rel, kind, "application/json")
            path.write_text(self.session.redact(pretty_json(doc)), encoding="utf-8")


def unavailable_diff(reason: str) -> SiteStateDiff:
    """The diff of a run whose summaries or diff could not be computed: no changes listed, one high risk flag
    naming the reason (docs/site-state.md, "Fail closed")."""
    risk = RiskFlag(
        code="summary-unavailable",
        severity="high",
        subject="site-state",
        message=f"the site-state summary could not be computed ({reason[:500]}); what the run did to "
        "the site's database is unknown",
    )
    return SiteStateDiff(before="", after="", risks=[risk], empty=False)
