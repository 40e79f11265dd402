"""``codebox review list|show|approve|approve-files|discard|iterate``, ``codebox apply`` and
``codebox artifacts prune`` (registered on the root app by :mod:`codebox_tui.cli`).

Every command prints one JSON document with ``--json``; errors are one line (exit 2 bad input,
5 apply conflict) or a ``wp-codebox/cli-failure/v1`` document.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from codebox_tui.cli.output import JsonOption, emit_json, progress, say, show
from codebox_tui.errors import BadInputError
from codebox_tui.textsafe import safe_text
from store import threeway
from store.apply import apply_decision, apply_hint
from store.changed_names import AmbiguousFileName
from store.comments import add_comment, delete_comment, edit_comment, list_comments
from store.compare import compare
from store.content import BundleContent, read_content
from store.db import BundleRecord, Store, shown_status
from store.decisions import decide, default_approver, prune_discarded, resolve_bundle
from store.feedback import export_feedback, record_iterate_feedback
from store.inbox import describe_bundle, flow_of, import_bundles
from store.journal import recover, target_lock
from store.patchtext import RawHunk
from store.revisions import bundle_interdiff, carried_comments, link, revisions

review_app = typer.Typer(help="Review captured bundles: list, inspect and decide.", no_args_is_help=True)

ApproverOption = typer.Option(None, "--approver", help="Who decides (default: the current user).")
ReasonOption = typer.Option("", "--reason", "-m", help="Why (required for iterate).")
BundleArg = typer.Argument(
    ..., help="@key (from review list), bundle directory, run id, or a unique bundle-id or content-digest prefix."
)


def _bundle_dict(bundle: BundleRecord) -> dict[str, Any]:
    return bundle.to_dict()


@review_app.command("list")
def review_list(
    status: str | None = typer.Option(
        None,
        "--status",
        help="Only bundles with this status (pending, approved, "
        "applied, discarded, changes-requested, informational = output only).",
    ),
    json_out: bool = JsonOption,
) -> None:
    """List recorded bundles, newest first."""
    with Store.open() as store:
        bundles = store.list_bundles(status=status)
        described = {} if json_out else {b.key: describe_bundle(b, flow_of(store, b)) for b in bundles}
    if json_out:
        emit_json({"schema": "codebox/bundle-list/v1", "bundles": [_bundle_dict(b) for b in bundles]})
        return
    if not bundles:
        say("no bundles recorded (codebox review import DIR adds bundles made elsewhere)")
        return
    # One line per bundle directory: runs that share a Mode A bundle id are listed separately, each with
    # its own @key (README "Review and decide"); what each is and how it went come first, as on Home.
    say(f"{'key':<6} {'bundle':<12}  {'status':<18} {'verdict':<14} {'tests':<13} {'files':>5}  title")
    for b in bundles:
        row = described[b.key]
        say(
            f"{b.ref:<6} {b.bundle_id.removeprefix('artifact-bundle-sha256-')[:12]:<12}  {shown_status(b.status):<18} "
            f"{row.verdict:<14} {row.delta.replace(' → ', '→') or '—':<13} {b.changed_files:>5}  {row.title}"
            + (f"  [{row.source}]" if row.source != "run" else "")
        )


@review_app.command("show")
def review_show(bundle: str = BundleArg, json_out: bool = JsonOption) -> None:
    """Show a bundle's changed files and its decisions."""
    with Store.open() as store:
        record = resolve_bundle(store, bundle)
        decisions = store.list_decisions(record.key)
    content = read_content(Path(record.path))
    if json_out:
        emit_json(
            {
                "schema": "codebox/bundle-review/v1",
                "bundle": _bundle_dict(record),
                "contentDigestVerified": content.content_digest == record.content_digest,
                "changedFiles": [
                    {
                        **e.model_dump(mode="json", include={"relativePath", "path", "status", "mountIndex"}),
                        "hunks": [
                            {"number": n, "sha256": h.sha256, "header": _hunk_header(h)}
                            for n, h in enumerate(content.hunks_of(e), start=1)
                        ],
                    }
                    for e in content.changed
                ],
                "decisions": [d.model_dump(mode="json", by_alias=True, exclude_none=True) for d in decisions],
            }
        )
        return
    say(f"bundle   {record.bundle_id}")
    say(f"key      {record.ref}")
    say(f"path     {record.path}")
    say(f"status   {shown_status(record.status)}")
    say(f"digest   {record.content_digest}")
    say(f"changed  {len(content.changed)} file(s)")
    for e in content.changed:
        say(f"  {e.status:<9} {safe_text(content.names.shown_name(e))}")
        for n, h in enumerate(content.hunks_of(e), start=1):
            say(f"      hunk {n}  {_hunk_header(h)}")
    for d in decisions:
        shown = _decision_files(content, d.approved_files, d.approved_relative_paths)
        files = f" [{', '.join(shown)}]" if shown else ""
        reason = f" — {d.reason}" if d.reason else ""
        say(f"decision {d.id}: {d.action} by {d.approver} at {d.decided_at}{files}{reason}")
        if d.approved_hunks:
            hunk_numbers = {rel: [h.sha256 for h in _hunks_named(content, rel)] for rel in d.approved_hunks}
            for rel, hashes in d.approved_hunks.items():
                numbers = [str(hunk_numbers[rel].index(h) + 1) if h in hunk_numbers[rel] else h[:12] for h in hashes]
                say(f"  {rel}: hunk(s) {', '.join(numbers)} of {len(hunk_numbers[rel])}")
        for a in d.applies:
            say(f"  applied with {a.adapter} to {a.target} at {a.applied_at} ({a.result.status})")


def _decision_files(content: BundleContent, files: list[str], relative: list[str] | None) -> list[str]:
    """A decision's files as a reviewer reads them: mount-relative, unless two mounts share one of the names."""
    if relative is None or any(content.names.is_ambiguous(e) for e in content.changed if e.relativePath in relative):
        return files
    return relative


def _hunks_named(content: BundleContent, name: str) -> list[RawHunk]:
    """The hunks of the file a recorded decision names (none when an old relative name is now ambiguous)."""
    try:
        return content.hunks(name)
    except AmbiguousFileName:
        return []


def _hunk_header(hunk: RawHunk) -> str:
    """The hunk's ``@@`` line, printable (section text from the sandbox is untrusted)."""
    return safe_text(hunk.text.split(b"\n", 1)[0].decode("utf-8", "replace"))


@review_app.command("import")
def review_import(
    folder: Path = typer.Argument(..., help="A bundle folder (holds manifest.json) or a folder of bundles."),
    json_out: bool = JsonOption,
) -> None:
    """Add bundles produced elsewhere (another machine, the reference implementation) to the inbox.

    Each bundle is verified first and only a valid one is added (fails closed); nothing is moved or
    copied. Exit 1 when any bundle was rejected."""
    with Store.open() as store:
        report = import_bundles(store, folder)
    if json_out:
        emit_json(
            {
                "schema": "codebox/bundle-import/v1",
                "success": not report.rejected,
                "imported": [_bundle_dict(b) for b in report.imported],
                "rejected": report.rejected,
            }
        )
    else:
        for b in report.imported:
            say(f"added {b.ref}  {b.bundle_id}  {b.changed_files} file(s)  {b.path}")
        for entry in report.rejected:
            say(f"REJECTED {entry['path']}: {entry['message']}", err=True)
            for violation in (entry.get("violations") or [])[:10]:
                say(f"  {violation.get('code', '?'):26} {violation.get('path', '')}", err=True)
        if report.imported:
            progress(f"review with: codebox review show {report.imported[0].ref}")
    if report.rejected:
        raise typer.Exit(1)


HunkOption = typer.Option(
    None,
    "--hunk",
    help="Approve only this hunk of a file: PATH:N, N numbered from 1 as codebox review show lists them "
    "(repeatable; a file's other hunks are not applied).",
)


def _parse_hunks(values: list[str] | None) -> dict[str, list[int]] | None:
    """``PATH:N`` options → ``{PATH: [N, …]}`` (a clear error naming --hunk otherwise)."""
    if not values:
        return None
    out: dict[str, list[int]] = {}
    for value in values:
        path, sep, number = value.rpartition(":")
        if not sep or not path.strip() or not number.strip().isdigit() or int(number) < 1:
            raise BadInputError(
                f"--hunk {value!r}: expected PATH:N with N a hunk number from 1 (see codebox review show)",
                code="hunk-invalid",
                field="--hunk",
            )
        out.setdefault(path.strip(), []).append(int(number))
    return out


def _decide(
    bundle: str,
    action: str,
    approver: str | None,
    reason: str,
    files: list[str] | None,
    json_out: bool,
    hunks: list[str] | None = None,
) -> None:
    picks = _parse_hunks(hunks)
    with Store.open() as store:
        decision = decide(
            store, bundle, action, approver=default_approver(approver), reason=reason, files=files, hunks=picks
        )
        feedback = record_iterate_feedback(store, decision)  # iterate: comments recorded, feedback written
    if json_out:
        emit_json(decision)
        if feedback is not None:
            progress(f"feedback: {feedback.markdown} and {feedback.json}")
        return
    if feedback is not None:
        say(f"feedback ({len(feedback.feedback.comments)} comment(s)): {feedback.markdown}")
        say(f"                  {feedback.json}")
    files_text = f" ({len(decision.approved_files)} file(s))" if decision.approved_files else ""
    if decision.approved_hunks:
        files_text += " (" + ", ".join(f"{rel}: {len(h)} hunk(s)" for rel, h in decision.approved_hunks.items()) + ")"
    where = f" @{decision.bundle_key}" if decision.bundle_key is not None else ""
    say(f"decision {decision.id}: {decision.action}{files_text} on {decision.artifact_id}{where}")
    if decision.action in ("approve", "approve-files"):
        progress(apply_hint(decision))


@review_app.command("approve")
def review_approve(
    bundle: str = BundleArg,
    approver: str | None = ApproverOption,
    reason: str = ReasonOption,
    hunks: list[str] | None = HunkOption,
    json_out: bool = JsonOption,
) -> None:
    """Approve every changed file (with --hunk, the named files only in part)."""
    _decide(bundle, "approve", approver, reason, None, json_out, hunks)


@review_app.command("approve-files")
def review_approve_files(
    bundle: str = BundleArg,
    files: list[str] | None = typer.Option(None, "--file", "-f", help="A changed file (relativePath or sandbox path)."),
    approver: str | None = ApproverOption,
    reason: str = ReasonOption,
    hunks: list[str] | None = HunkOption,
    json_out: bool = JsonOption,
) -> None:
    """Approve an explicit subset of the changed files (--file whole, --hunk PATH:N in part)."""
    _decide(bundle, "approve-files", approver, reason, files, json_out, hunks)


@review_app.command("discard")
def review_discard(
    bundle: str = BundleArg,
    approver: str | None = ApproverOption,
    reason: str = ReasonOption,
    json_out: bool = JsonOption,
) -> None:
    """Discard the changes (the bundle is kept as evidence; ``codebox artifacts prune`` deletes)."""
    _decide(bundle, "discard", approver, reason, None, json_out)


@review_app.command("iterate")
def review_iterate(
    bundle: str = BundleArg,
    reason: str = typer.Option(..., "--reason", "-m", help="What should change."),
    approver: str | None = ApproverOption,
    json_out: bool = JsonOption,
) -> None:
    """Request changes, with a reason."""
    _decide(bundle, "iterate", approver, reason, None, json_out)


comment_app = typer.Typer(
    help="Line, range and file comments on a bundle (typed issue, suggestion, note or praise).",
    no_args_is_help=True,
)
review_app.add_typer(comment_app, name="comment")


def _parse_lines(text: str | None) -> tuple[int | None, int | None]:
    """``12`` or ``12-15`` → (start, end); None → a file comment."""
    if text is None or not text.strip():
        return None, None
    start, sep, end = text.strip().partition("-")
    if not start.strip().isdigit() or (sep and not end.strip().isdigit()):
        raise BadInputError(
            f"--line takes a line number or a range such as 12-15, not {text!r}", code="comment-invalid", field="--line"
        )
    return int(start), int(end) if sep else int(start)


def _comment_line(c: Any) -> str:
    state = f" [sent with decision {c.decision_id}]" if c.decision_id is not None else ""
    return f"#{c.id:<4} {c.kind:<10} {c.where()}{state}\n      {c.body}"


@comment_app.command("add")
def comment_add(
    bundle: str = BundleArg,
    file: str = typer.Option(..., "--file", "-f", help="The changed file (relativePath or sandbox path)."),
    line: str | None = typer.Option(None, "--line", "-l", help="A line (12) or range (12-15); none: a file comment."),
    old: bool = typer.Option(False, "--old", help="The line numbers are on the removed (-) side."),
    kind: str = typer.Option("issue", "--type", "-t", help="issue, suggestion, note or praise."),
    message: str = typer.Option(..., "--message", "-m", help="The comment."),
    author: str | None = typer.Option(None, "--author", help="Who comments (default: the current user)."),
    json_out: bool = JsonOption,
) -> None:
    """Comment on a changed file, or on a line or range of its diff."""
    start, end = _parse_lines(line)
    with Store.open() as store:
        record = resolve_bundle(store, bundle)
        comment = add_comment(
            store,
            record,
            path=file,
            kind=kind,
            body=message,
            author=default_approver(author),
            line_start=start,
            line_end=end,
            side="old" if old else "new",
        )
    if json_out:
        emit_json(comment.to_dict())
        return
    show(_comment_line(comment))


@comment_app.command("list")
def comment_list(bundle: str = BundleArg, json_out: bool = JsonOption) -> None:
    """A bundle's comments, file by file."""
    with Store.open() as store:
        record = resolve_bundle(store, bundle)
        comments = list_comments(store, record.key)
    if json_out:
        emit_json(
            {"schema": "codebox/comment-list/v1", "bundleKey": record.key, "comments": [c.to_dict() for c in comments]}
        )
        return
    if not comments:
        show(f"no comments on {record.ref}")
    for c in comments:
        show(_comment_line(c))


@comment_app.command("edit")
def comment_edit(
    comment: str = typer.Argument(..., help="The comment id (from comment list)."),
    message: str | None = typer.Option(None, "--message", "-m", help="The new text."),
    kind: str | None = typer.Option(None, "--type", "-t", help="The new type."),
    json_out: bool = JsonOption,
) -> None:
    """Change a comment's text or type (until a decision records it)."""
    with Store.open() as store:
        changed = edit_comment(store, comment, body=message, kind=kind)
    if json_out:
        emit_json(changed.to_dict())
        return
    show(_comment_line(changed))


@comment_app.command("delete")
def comment_delete(
    comment: str = typer.Argument(..., help="The comment id (from comment list)."),
    json_out: bool = JsonOption,
) -> None:
    """Delete a comment (until a decision records it)."""
    with Store.open() as store:
        deleted = delete_comment(store, comment)
    if json_out:
        emit_json({"schema": "codebox/comment-deleted/v1", "comment": deleted.to_dict()})
        return
    show(f"deleted comment #{deleted.id} on {deleted.where()}")


@review_app.command("feedback")
def review_feedback(
    bundle: str = BundleArg,
    print_md: bool = typer.Option(False, "--print", help="Also print the Markdown (to copy it)."),
    json_out: bool = JsonOption,
) -> None:
    """Write feedback.md and feedback.json next to the bundle: the latest request-changes decision
    with the comments it recorded, or the open comments when there is none."""
    with Store.open() as store:
        record = resolve_bundle(store, bundle)
        files = export_feedback(store, record)
    if json_out:
        emit_json(files.feedback.to_wire() | {"files": {"markdown": str(files.markdown), "json": str(files.json)}})
        return
    if print_md:
        show(files.text, nl=False)
    progress(f"feedback ({len(files.feedback.comments)} comment(s)): {files.markdown}")
    progress(f"                  {files.json}")


@review_app.command("link")
def review_link(
    bundle: str = BundleArg,
    revises: str = typer.Option(..., "--revises", help="The earlier bundle this one is a revision of."),
    json_out: bool = JsonOption,
) -> None:
    """Make BUNDLE the next revision of an earlier bundle (one review, its comments carried over)."""
    with Store.open() as store:
        new, old = resolve_bundle(store, bundle), resolve_bundle(store, revises)
        link(store, new, old)
        chain = revisions(store, new)
    if json_out:
        emit_json({"schema": "codebox/review-revisions/v1", "revisions": [r.to_dict() for r in chain]})
        return
    number = next(r.number for r in chain if r.bundle.key == new.key)
    show(f"{new.ref} is revision {number} of {len(chain)} (revises {old.ref})")


def _tests_text(tests: dict[str, Any], verdict: str | None) -> str:
    text = (
        f"{tests.get('passed', 0)}/{tests.get('total', 0)} passed, {tests.get('failed', 0)} failed"
        if tests.get("total") is not None
        else "no tests"
    )
    return text + (f", verdict {verdict}" if verdict else "")


@review_app.command("revisions")
def review_revisions(
    bundle: str = BundleArg,
    show_interdiff: bool = typer.Option(
        False,
        "--interdiff",
        help="Also show what changed since the revision before BUNDLE (or the one given with --since).",
    ),
    since: str | None = typer.Option(None, "--since", help="The earlier revision to compare with."),
    json_out: bool = JsonOption,
) -> None:
    """The revisions of BUNDLE's review: decision and tests per revision, and the interdiff."""
    with Store.open() as store:
        record = resolve_bundle(store, bundle)
        chain = revisions(store, record)
        before = [r.bundle for r in chain if r.number < _number(chain, record)]
        base = resolve_bundle(store, since) if since else (before[-1] if before else None)
        files = bundle_interdiff(base, record) if (show_interdiff or since) and base is not None else None
        carried = carried_comments(store, record)
    if json_out:
        emit_json(
            {
                "schema": "codebox/review-revisions/v1",
                "revisions": [r.to_dict() for r in chain],
                "interdiff": None
                if files is None
                else {"from": base.key if base else None, "to": record.key, "files": [f.to_dict() for f in files]},
                "carriedComments": [c.to_dict() for c in carried],
            }
        )
        return
    for r in chain:
        here = "  <" if r.bundle.key == record.key else ""
        decision = r.decision.action if r.decision else "undecided"
        linked = f" ({r.how})" if r.how else ""
        say(
            f"revision {r.number}{linked}: {r.bundle.ref} {r.bundle.content_digest[:12]}  {decision:<14} "
            f"{_tests_text(r.tests, r.verdict)}{here}"
        )
    if carried:
        say(f"{len(carried)} comment(s) from earlier revisions, {sum(c.outdated for c in carried)} outdated:")
        for c in carried:
            say(f"  #{c.id} {c.kind} {c.where()}{' (outdated)' if c.outdated else ''}: {c.body}")
    if files is not None and base is not None:
        say(f"interdiff {base.ref} -> {record.ref}:")
        for f in files:
            say(f"  {f.change:<20} {f.path}")
            for line in f.lines:
                say(f"    {safe_text(line, tab_size=4)}")
    elif show_interdiff:
        progress(f"{record.ref} is the first revision: nothing to compare with")


@review_app.command("compare")
def review_compare(
    a: str = typer.Argument(..., help="The first bundle (@key, directory, run id or a unique prefix)."),
    b: str = typer.Argument(..., help="The second bundle."),
    patches: bool = typer.Option(False, "--patches", help="Also show how the patches differ, file by file."),
    json_out: bool = JsonOption,
) -> None:
    """Compare two bundles side by side: files, patches, test results, verdicts and decisions."""
    with Store.open() as store:
        left, right = resolve_bundle(store, a), resolve_bundle(store, b)
        result = compare(store, left, right)
    if json_out:
        emit_json(result.to_dict())
        return
    for label, side in (("A", result.a), ("B", result.b)):
        decision = side.decision.action if side.decision else "undecided"
        show(
            f"{label} {side.bundle.ref} {side.bundle.content_digest[:12]}  {len(side.status)} file(s)  "
            f"{decision:<14} {_tests_text(side.tests, side.verdict)}  {side.bundle.path}"
        )
    show(f"{'file':<40} {'A':<18} {'B':<18} patch")
    for f in result.files:

        def cell(status: str | None, counts: tuple[int, int] | None) -> str:
            return "-" if status is None else f"{status} +{counts[0]} -{counts[1]}" if counts else status

        verdict = "same" if f.same else ("only A" if f.b is None else "only B" if f.a is None else "differs")
        show(f"{safe_text(f.path):<40} {cell(f.a, f.a_counts):<18} {cell(f.b, f.b_counts):<18} {verdict}")
        if patches and f.interdiff is not None:
            for line in f.interdiff.lines:
                show(f"    {safe_text(line, tab_size=4)}")


def _number(chain: list[Any], record: BundleRecord) -> int:
    return int(next(r.number for r in chain if r.bundle.key == record.key))


def apply_command(
    decision: str = typer.Argument(..., help="The decision id (from codebox review approve…)."),
    adapter: str = typer.Option(..., "--adapter", "-a", help="directory, git, patch or an installed adapter."),
    target: Path = typer.Option(..., "--target", "-t", help="Mount-root folder, git work tree or patch file."),
    branch: str | None = typer.Option(None, "--branch", help="git: create this branch and commit on it."),
    commit: bool = typer.Option(False, "--commit", help="git: commit the approved files."),
    message: str | None = typer.Option(None, "--message", help="git: the commit message."),
    three_way: bool | None = typer.Option(
        None,
        "--3way/--no-3way",
        help="Merge the approved hunks into target files changed since the run (default: on for git, off "
        "for directory); any conflicting hunk still refuses the apply, writing nothing.",
    ),
    json_out: bool = JsonOption,
) -> None:
    """Apply an approval decision after re-verifying the bundle and its content digest."""
    options = {k: v for k, v in (("branch", branch), ("commit", "1" if commit else None), ("message", message)) if v}
    if three_way is not None:
        options[threeway.OPTION] = "on" if three_way else "off"
    with Store.open() as store:
        result = apply_decision(store, decision, adapter, target, options=options)
    if json_out:
        emit_json(result.to_wire())
        return
    if result.status == "already-applied":
        show(f"decision {decision} was already applied with {adapter} to {target}; nothing to do")
        return
    show(f"{result.status}: {len(result.applied_files)} file(s) with {result.adapter}")
    for name in result.applied_files:
        show(f"  {safe_text(name)}")
    merged = threeway.summary(result.target.get("three_way"))
    if merged:
        show(safe_text(merged))
    if result.branch:
        show(f"branch {result.branch}")
    if result.commit:
        show(f"commit {result.commit}")


def recover_command(
    target: Path = typer.Argument(..., help="A folder a directory apply was writing to."),
    json_out: bool = JsonOption,
) -> None:
    """Finish or undo a directory apply that was interrupted (also done by the next apply)."""
    root = target.expanduser().resolve()
    if not root.is_dir():
        raise BadInputError(f"{target} is not a directory", code="target-missing", field="target")
    with target_lock(root):
        outcome = recover(root)
    if json_out:
        emit_json({"schema": "codebox/apply-recovery/v1", "target": str(root), "outcome": outcome or "nothing"})
        return
    messages = {
        None: "nothing to recover",
        "discarded": "an interrupted apply had not started writing; its staging was removed",
        "completed": "an interrupted apply had committed; it is now complete",
        "rolled-back": "an interrupted apply was rolled back; the folder is as before",
    }
    show(f"{root}: {messages.get(outcome, outcome)}")


def prune_command(
    dry_run: bool = typer.Option(False, "--dry-run", help="Only list what would be deleted."),
    json_out: bool = JsonOption,
) -> None:
    """Delete the directories of discarded bundles (the only command that deletes evidence)."""
    with Store.open() as store:
        pruned = prune_discarded(store, dry_run=dry_run)
    if json_out:
        emit_json({"schema": "codebox/prune/v1", "dryRun": dry_run, "bundles": [b.to_dict() for b in pruned]})
        return
    verb = "would delete" if dry_run else "deleted"
    for b in pruned:
        show(f"{verb} {b.path}")
    show(f"{len(pruned)} discarded bundle(s) {'to prune' if dry_run else 'pruned'}")


def register(app: typer.Typer) -> None:
    """Add ``review``, ``apply`` and ``apply-recover``."""
    app.add_typer(review_app, name="review")
    app.command("apply")(apply_command)
    app.command("apply-recover")(recover_command)


def register_prune(artifacts_app: typer.Typer) -> None:
    """Add ``prune`` to the ``artifacts`` group (the group itself is :mod:`codebox_tui.cli.artifacts`)."""
    artifacts_app.command("prune")(prune_command)
