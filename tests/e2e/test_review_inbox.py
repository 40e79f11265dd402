"""The review inbox end to end: every run reaches it, no run hides another, bundles made elsewhere (by the
reference implementation) are imported, reviewed, decided and applied, and decisions name sandbox paths.

Real native sandboxes (the host's PHP in real bubblewrap: what is under test is the inbox and apply-back, the same
on both backends; each run checks the backend its bundle records), the real ``codebox`` CLI, a real SQLite store (a
private ``CODEBOX_HOME`` per test; the session's WordPress builds are shared through symlinks, nothing boots for
them). The first run and the first import of a reference bundle are ``codebox`` processes of their own, as a user
starts them; the other runs, queries and decisions go through the same entry point (``codebox_tui.cli.main``) in
the test's process (tests/factories/holds.py): a new process costs over a CPU-second of imports.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.factories.holds import codebox_in_process, linked_home
from tests.factories.native import recorded_backend
from tests.factories.paths import EXAMPLE_PLUGIN
from tests.factories.reference_bundle import reference_preflight_accepts, write_reference_bundle
from tests.factories.tui import confirm_ready
from tests.factories.widget_hosts import wait_for

SLUG = "simple-plugin"
TARGET = f"/wordpress/wp-content/plugins/{SLUG}"
REF_TARGET = "/wordpress/wp-content/plugins/ref-plugin"


def _bare_home(tmp_path: Path) -> Path:
    """A private CODEBOX_HOME for a test that boots nothing (own store, own default artifacts root)."""
    home = tmp_path / "home"
    home.mkdir()
    return home


ENV: dict[str, str | None] = {"CODEBOX_APPROVER": "maintainer", "CODEBOX_ARTIFACTS_ROOT": None}


def _codebox_process(home: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """``codebox ARGS`` in a process of its own, as a user starts it."""
    env = {**os.environ, "CODEBOX_HOME": str(home), "CODEBOX_APPROVER": "maintainer"}
    env.pop("CODEBOX_ARTIFACTS_ROOT", None)
    return subprocess.run(
        [sys.executable, "-m", "codebox_tui", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def _codebox(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``codebox ARGS`` through the same entry point in this process (a query or decision after a run)."""
    return codebox_in_process(home, *args, env=ENV)


def _json(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return json.loads(proc.stdout)


def _plugin_copy(parent: Path) -> Path:
    parent.mkdir(parents=True)
    dest = parent / SLUG
    shutil.copytree(EXAMPLE_PLUGIN, dest)
    return dest


@pytest.mark.native
def test_two_runs_with_the_same_mode_a_id_are_both_reviewable_and_apply_their_own_content(
    codebox_home: Path, tmp_path: Path
) -> None:
    home = linked_home(codebox_home, tmp_path)
    bundles = []
    for word, start in (("one", _codebox_process), ("two", _codebox)):
        plugin = _plugin_copy(tmp_path / word)
        code = f"file_put_contents(WP_PLUGIN_DIR . '/{SLUG}/notes.txt', \"written by run {word}\\n\"); echo 'ok';"
        # no --artifacts: the one default root under CODEBOX_HOME
        # the native backend: what is under test is the inbox and apply-back, not the sandbox (CI time)
        proc = start(
            home,
            "run",
            "--backend",
            "native",
            "--mount",
            f"{plugin}:{TARGET}:readwrite",
            "--command",
            "wordpress.run-php",
            "--arg",
            f"code={code}",
            "--json",
        )
        doc = _json(proc)
        assert doc["success"] is True
        run_dir = Path(doc["artifacts"]["directory"])
        assert run_dir.parent == home / "artifacts" and recorded_backend(run_dir) == "native"
        bundles.append(doc["artifacts"])
        # progress on stderr even with --json: phases, steps and elapsed time
        assert "codebox run [" in proc.stderr and "boot" in proc.stderr and "step 1: wordpress.run-php" in proc.stderr
        assert "s] capture" in proc.stderr
    one, two = bundles
    assert one["id"] == two["id"]  # Mode A hashes the file list: the same files touched, the same id
    assert one["contentDigestB"] != two["contentDigestB"]

    listed = _json(_codebox(home, "review", "list", "--json"))["bundles"]
    assert {(b["path"], b["content_digest"]) for b in listed} == {
        (str(Path(one["directory"]).resolve()), one["contentDigestB"]),
        (str(Path(two["directory"]).resolve()), two["contentDigestB"]),
    }
    keys = {b["content_digest"]: b["key"] for b in listed}
    text = _codebox(home, "review", "list")
    assert text.stdout.count(one["id"].removeprefix("artifact-bundle-sha256-")[:12]) == 2, text.stdout
    header, *lines = text.stdout.splitlines()
    assert header.split()[:7] == ["key", "bundle", "status", "verdict", "tests", "files", "title"]
    assert all("wordpress.run-php" in line for line in lines), text.stdout  # what each run did, as on Home
    shown = _codebox(home, "artifacts", "show", f"@{keys[one['contentDigestB']]}")  # the same @keys as review
    assert shown.returncode == 0 and one["id"] in shown.stdout, shown.stderr

    ambiguous = _codebox(home, "review", "approve", one["id"])
    assert ambiguous.returncode == 2 and "matches 2 bundles" in ambiguous.stderr
    assert "Traceback" not in ambiguous.stderr

    for word, bundle in (("one", one), ("two", two)):
        decision = _json(_codebox(home, "review", "approve", f"@{keys[bundle['contentDigestB']]}", "--json"))
        assert decision["content_digest"] == bundle["contentDigestB"]
        assert decision["approved_files"] == [f"{TARGET}/notes.txt"]  # sandbox paths, as the reference expects
        assert decision["approved_relative_paths"] == ["notes.txt"]
        assert decision["bundle_directory"] == str(Path(bundle["directory"]).resolve())
        target = _plugin_copy(tmp_path / f"target-{word}")
        applied = _json(
            _codebox(home, "apply", str(decision["id"]), "--adapter", "directory", "--target", str(target), "--json")
        )
        assert applied["status"] == "applied" and applied["applied_files"] == ["notes.txt"]
        assert (target / "notes.txt").read_text() == f"written by run {word}\n"

    statuses = {b["content_digest"]: b["status"] for b in _json(_codebox(home, "review", "list", "--json"))["bundles"]}
    assert statuses == {one["contentDigestB"]: "applied", two["contentDigestB"]: "applied"}


def _reference_change(tmp_path: Path) -> tuple[Path, Path]:
    before = tmp_path / "before" / "ref-plugin"
    (before / "includes").mkdir(parents=True)
    (before / "ref-plugin.php").write_text(
        "<?php\n/* Plugin Name: Ref */\nrequire __DIR__ . '/includes/old.php';\n\nfunction ref_version() {\n"
        "\treturn '1.0';\n}\n"
    )
    (before / "includes" / "old.php").write_text("<?php\n// to be removed\n")
    (before / "readme.txt").write_text("=== Ref ===\n")
    after = tmp_path / "after" / "ref-plugin"
    shutil.copytree(before, after)
    (after / "ref-plugin.php").write_text(
        "<?php\n/* Plugin Name: Ref */\nrequire __DIR__ . '/includes/new.php';\n\nfunction ref_version() {\n"
        "\treturn '2.0';\n}\n"
    )
    (after / "includes" / "old.php").unlink()
    (after / "includes" / "new.php").write_text("<?php\nfunction ref_new() { return 42; }\n")
    return before, after


def test_a_reference_bundle_is_imported_listed_shown_decided_and_applied(tmp_path: Path) -> None:
    home = _bare_home(tmp_path)
    before, after = _reference_change(tmp_path)
    elsewhere = tmp_path / "reference-artifacts"
    bundle = elsewhere / "runtime-mhx3k2ab-q7r8s9"
    written = write_reference_bundle(bundle, before, after, target=REF_TARGET, php="8.3")
    untouched = sorted(p.relative_to(bundle).as_posix() for p in bundle.rglob("*"))

    imported = _json(_codebox_process(home, "review", "import", str(elsewhere), "--json"))
    assert imported["success"] is True and imported["rejected"] == []
    (record,) = imported["imported"]
    assert record["bundle_id"] == written["id"] and record["origin"] == "import"
    assert record["path"] == str(bundle.resolve())  # never moved or copied
    assert sorted(p.relative_to(bundle).as_posix() for p in bundle.rglob("*")) == untouched

    (listed,) = _json(_codebox(home, "review", "list", "--json"))["bundles"]
    assert listed["content_digest"] == written["contentDigestB"] and listed["changed_files"] == 3

    shown = _codebox(home, "artifacts", "show", str(bundle))
    assert shown.returncode == 0, shown.stderr
    assert "PHP 8.3" in shown.stdout and "PHP ?" not in shown.stdout
    assert f"content  {written['contentDigestB']}" in shown.stdout
    review = _json(_codebox(home, "review", "show", f"@{record['key']}", "--json"))
    assert review["contentDigestVerified"] is True

    decision = _json(_codebox(home, "review", "approve", f"@{record['key']}", "--json"))
    assert decision["content_digest"] == written["contentDigestB"]
    assert sorted(decision["approved_files"]) == sorted(c["path"] for c in written["changed"])
    assert reference_preflight_accepts(written["changed"], decision["approved_files"]) == []
    # the mount-relative list would not pass the reference's preflight: that is why both are kept
    assert reference_preflight_accepts(written["changed"], decision["approved_relative_paths"]) != []

    target = tmp_path / "target" / "ref-plugin"
    shutil.copytree(before, target)
    applied = _json(
        _codebox(home, "apply", str(decision["id"]), "--adapter", "directory", "--target", str(target), "--json")
    )
    assert sorted(applied["applied_files"]) == ["includes/new.php", "includes/old.php", "ref-plugin.php"]
    assert {p.relative_to(target).as_posix(): p.read_text() for p in target.rglob("*") if p.is_file()} == {
        p.relative_to(after).as_posix(): p.read_text() for p in after.rglob("*") if p.is_file()
    }


def test_a_tampered_reference_bundle_is_not_imported(tmp_path: Path) -> None:
    home = _bare_home(tmp_path)
    before, after = _reference_change(tmp_path)
    good = tmp_path / "elsewhere" / "runtime-good"
    bad = tmp_path / "elsewhere" / "runtime-bad"
    write_reference_bundle(good, before, after, target=REF_TARGET)
    write_reference_bundle(bad, before, after, target=REF_TARGET, runtime_id="runtime-other")
    patch = bad / "files" / "patch.diff"
    patch.write_text(patch.read_text().replace("'2.0'", "'6.6.6'"))  # a change nobody reviewed
    proc = _codebox(home, "review", "import", str(tmp_path / "elsewhere"), "--json")
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert [b["path"] for b in doc["imported"]] == [str(good.resolve())]
    (rejected,) = doc["rejected"]
    assert rejected["path"] == str(bad) and rejected["code"] == "bundle-invalid"
    assert {v["code"] for v in rejected["violations"]} >= {"file-hash-mismatch"}
    listed = _json(_codebox(home, "review", "list", "--json"))["bundles"]
    assert [b["path"] for b in listed] == [str(good.resolve())]
    # discarding an imported bundle never deletes its folder, not even on prune (it is not Codebox's)
    _json(_codebox(home, "review", "discard", str(good), "--json"))
    assert _codebox(home, "artifacts", "prune").returncode == 0
    assert (good / "manifest.json").is_file()
    missing = _codebox(home, "review", "import", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "not a folder" in missing.stderr and "Traceback" not in missing.stderr


async def test_home_opens_a_reference_bundle_by_path_and_the_approve_dialog_names_its_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from textual.widgets import Input, Static

    from codebox_tui.app import CodeboxApp
    from codebox_tui.screens.review import ReviewScreen
    from codebox_tui.settings import reload_settings
    from store.db import Store
    from tests.factories.tui import review_opened

    home = _bare_home(tmp_path)
    session_home = os.environ["CODEBOX_HOME"]
    monkeypatch.setenv("CODEBOX_HOME", str(home))
    reload_settings()
    try:
        before, after = _reference_change(tmp_path)
        bundle = tmp_path / "elsewhere" / "runtime-tui"
        written = write_reference_bundle(bundle, before, after, target=REF_TARGET, php="8.2")
        app = CodeboxApp()
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            await pilot.press("o")
            await pilot.pause()
            field = app.screen.query_one("#bundle-path", Input)
            field.value = str(bundle)
            await pilot.press("enter")
            assert isinstance(await review_opened(pilot), ReviewScreen)  # verified in a worker first
            provenance = app.screen.text.provenance_text()
            assert "[b]PHP[/b] 8.2" in provenance
            await pilot.press("a")
            await wait_for(pilot, lambda: confirm_ready(app), timeout=60)  # the digest is hashed in a worker
            body = str(app.screen.query_one("#confirm-body", Static).render())
            assert f"Content digest (Mode B): {written['contentDigestB'][:16]}…" in body  # shortened, as the title
            await pilot.press("y")
            await pilot.pause()
            await pilot.press("escape")
            await pilot.pause()
        with Store.open() as store:
            (record,) = store.list_bundles()
            assert record.path == str(bundle.resolve()) and record.origin == "import"
            (decision,) = store.list_decisions(record.key)
            assert sorted(decision.approved_files) == sorted(c["path"] for c in written["changed"])
    finally:
        # back to the test session's home (never unset: settings would fall back to the user's own)
        monkeypatch.setenv("CODEBOX_HOME", session_home)
        reload_settings()


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.native
def test_evaluate_patch_reaches_the_inbox_and_reports_progress(codebox_home: Path, tmp_path: Path) -> None:
    """It used to print nothing for minutes and never reach ``review list``."""
    home = linked_home(codebox_home, tmp_path)
    plugin = tmp_path / "buggy-counter"
    shutil.copytree(EXAMPLES / "plugins-for-recipes" / "buggy-counter", plugin)
    proc = _codebox(
        home,
        "evaluate-patch",
        "--backend",
        "native",
        "--plugin",
        str(plugin),
        "--patch",
        str(EXAMPLES / "patches" / "buggy-counter-fix.patch"),
        "--json",
    )
    doc = json.loads(proc.stdout)
    assert doc["bundleId"], proc.stderr
    assert Path(doc["bundleDir"]).parent == home / "artifacts"  # the one default root
    assert recorded_backend(Path(doc["bundleDir"])) == "native"
    lines = [line for line in proc.stderr.splitlines() if line.startswith("codebox evaluate-patch [")]
    text = "\n".join(lines)
    for expected in (
        "start:",
        "boot:",
        "ready:",
        "step 1: wordpress.run-php",
        "wordpress.phpunit",
        "patch applied",
        "wordpress.browser-probe",
        "capture:",
        "inbox:",
    ):
        assert expected in text, (expected, proc.stderr)
    elapsed = [float(line.split("[", 1)[1].split("s]", 1)[0]) for line in lines]
    assert elapsed == sorted(elapsed) and elapsed[-1] > 0
    listed = _json(_codebox(home, "review", "list", "--json"))["bundles"]
    assert [(b["bundle_id"], b["path"]) for b in listed] == [(doc["bundleId"], str(Path(doc["bundleDir"]).resolve()))]
    runs = _codebox(home, "review", "show", listed[0]["run_id"], "--json")
    assert _json(runs)["bundle"]["key"] == listed[0]["key"]  # the run id names its bundle


@pytest.mark.native
def test_recipe_run_reaches_the_inbox_and_quiet_silences_progress(codebox_home: Path, tmp_path: Path) -> None:
    home = linked_home(codebox_home, tmp_path)
    recipe = EXAMPLES / "recipes" / "plugin-scaffold-mutation.json"
    proc = _codebox(home, "recipe-run", str(recipe), "--backend", "native", "--json", "--quiet")
    doc = _json(proc)
    assert doc["bundleId"] and "codebox recipe-run [" not in proc.stderr
    assert recorded_backend(Path(doc["bundleDir"])) == "native"
    (listed,) = _json(_codebox(home, "review", "list", "--json"))["bundles"]
    assert listed["bundle_id"] == doc["bundleId"] and listed["run_id"] == doc["runtimeId"]
    assert Path(listed["path"]).parent == (home / "artifacts").resolve()
    decision = _json(_codebox(home, "review", "approve", doc["runtimeId"], "--json"))
    assert decision["approved_files"] == ["/wordpress/wp-content/plugins/scratch-plugin/feature.php"]
