"""Issue 12: nothing Codebox runs on the host trusts sandbox-written data.

Each test performs the attack for real (PHP inside a real sandbox plants links, a git repository or an apply
journal; real git; the real store and the real ``codebox`` CLI) and asserts the host is untouched
(docs/security-host.md). The planted repository and journal are read by host-side code shared by both backends
(baselines, apply-back), so those attacks run on the native backend (docs/backends.md) and assert it; links for
the disposal stay on Playground, which has its own folders to dispose of (``/internal``'s opcache copy). The CLI's
refusals, queries and recoveries run through the real entry point in-process."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.runtime.mounts import remove_tree
from tests.factories.holds import codebox_in_process
from tests.factories.native import NATIVE, native_run, recorded_backend
from tests.factories.waiting import wait_for_reaper


def _php_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _host_dir(path: Path, mode: int) -> Path:
    path.mkdir()
    (path / "keep.txt").write_text(f"contents of {path.name}\n")
    (path / "sub").mkdir()
    (path / "sub" / "nested.txt").write_text("nested\n")
    os.chmod(path, mode)
    return path


def _state(path: Path) -> dict[str, Any]:
    return {
        "mode": stat.S_IMODE(os.lstat(path).st_mode),
        "files": sorted(p.relative_to(path).as_posix() for p in path.rglob("*")),
        "keep": (path / "keep.txt").read_text(),
        "sub": stat.S_IMODE(os.lstat(path / "sub").st_mode),
    }


# -- 1. disposal never follows links ----------------------------------------------------------------
@pytest.mark.playground
def test_disposal_does_not_chmod_host_folders_through_links_php_planted(make_run_session: Any, tmp_path: Path) -> None:
    private = _host_dir(tmp_path / "host-private", 0o700)
    sticky = _host_dir(tmp_path / "host-sticky", 0o1777)
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "plugin.php").write_text("<?php\n")
    before = {"private": _state(private), "sticky": _state(sticky)}
    links = {
        "/wordpress/wp-content/evil-private": private,  # the sandbox's site copy
        "/wordpress/wp-content/uploads/evil-sticky": sticky,
        "/wordpress/evil-deep/a/b/c/evil-sticky": sticky,
        "/internal/shared/opcache/evil-private": private,  # the sandbox's opcache copy
        "/wordpress/wp-content/plugins/p/evil-private": private,  # a read-write mount
    }
    code = (
        "$r = [];"
        + "".join(
            f"@mkdir(dirname({_php_string(link)}), 0777, true);"
            f"$r[{_php_string(link)}] = symlink({_php_string(str(target))}, {_php_string(link)});"
            for link, target in links.items()
        )
        + "@mkdir('/wordpress/locked/inner', 0777, true); chmod('/wordpress/locked/inner', 0); chmod('/wordpress/locked', 0555);"
        + "echo json_encode($r);"
    )
    run = make_run_session(mounts=[f"{plugin}:/wordpress/wp-content/plugins/p:readwrite"])
    try:
        result = run.execute("wordpress.run-php", [f"code={code}"])
        assert result.exitCode == 0, result.stdout + result.stderr
        planted = json.loads(result.stdout)
        assert planted["/wordpress/wp-content/evil-private"] is True, planted
        assert planted["/wordpress/wp-content/plugins/p/evil-private"] is True, planted
        # a real host symlink: in the mount folder itself, or in its copy when mounts are copy-on-write
        assert os.path.islink(plugin / "evil-private") or any(
            os.path.islink(p) for p in Path(run.sandbox.work_dir).rglob("evil-private")
        )
        sandbox = run.sandbox
        work_dir = Path(sandbox.work_dir)
        assert os.path.islink(work_dir / "wordpress" / "wp-content" / "evil-private")
    finally:
        run.close()
    # the folders are removed by the detached reaper (runtime/reaper.py), after close() returned
    assert wait_for_reaper(run.reaper_pid), "the reaper did not finish"
    assert not work_dir.exists()
    assert {"private": _state(private), "sticky": _state(sticky)} == before


def test_remove_tree_unlinks_links_and_removes_locked_and_deep_folders(tmp_path: Path) -> None:
    private = _host_dir(tmp_path / "host-private", 0o700)
    before = _state(private)
    tree = tmp_path / "tree"
    deep = tree.joinpath(*["d"] * 200)
    deep.mkdir(parents=True)
    (deep / "link").symlink_to(private)
    (tree / "top-link").symlink_to(private)
    locked = tree / "locked" / "inner"
    locked.mkdir(parents=True)
    (locked / "f").write_text("x")
    os.chmod(locked, 0)
    os.chmod(locked.parent, 0o555)
    remove_tree(tree)
    assert not tree.exists()
    assert _state(private) == before
    link = tmp_path / "just-a-link"
    link.symlink_to(private)
    remove_tree(link)
    assert not os.path.lexists(link) and _state(private) == before


# -- 2. host git never runs what a planted repository configures -------------------------------------
HOOKS = (
    "post-checkout",
    "pre-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "post-index-change",
    "pre-auto-gc",
    "reference-transaction",
    "post-rewrite",
    "pre-applypatch",
    "post-applypatch",
)


def _plain_git(cwd: Path, *args: str) -> str:
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout


def build_evil_repo(repo: Path, markers: Path, *, stale_stat: bool = True) -> None:
    """A complete repository whose configuration names programs git would run: fsmonitor, clean /
    smudge / process filters (one defined through an included file), a textconv, a signing program and
    every hook. Each program only creates a marker file."""
    from tests.factories.apply_back import BASELINE, write_tree

    markers.mkdir(exist_ok=True)
    repo.mkdir(exist_ok=True)
    write_tree(repo, BASELINE)
    (repo / "notes.md").write_text("# notes\n")
    (repo / ".gitattributes").write_text("*.txt filter=evil diff=evil\n*.php filter=evilproc\n*.md filter=inc\n")
    _plain_git(repo, "init", "-q", "-b", "main")
    _plain_git(repo, "add", "-A")
    _plain_git(repo, "-c", "user.name=Dev", "-c", "user.email=dev@example.test", "commit", "-q", "-m", "baseline")
    git_dir = repo / ".git"
    script = git_dir / "x.sh"
    script.write_text(f'#!/bin/sh\ntouch "{markers}/$1"\ncat\n')
    fsmonitor = git_dir / "fsmonitor.sh"
    fsmonitor.write_text(f'#!/bin/sh\ntouch "{markers}/fsmonitor"\nexit 0\n')
    for path in (script, fsmonitor):
        path.chmod(0o755)
    script = ".git/x.sh"  # relative: git runs filters and hooks from the top of the work tree
    (git_dir / "extra.config").write_text(
        f'[filter "inc"]\n\tclean = sh {script} inc-clean\n\tsmudge = sh {script} inc-smudge\n\trequired = true\n'
    )
    with (git_dir / "config").open("a") as config:
        config.write(
            "[core]\n\tfsmonitor = .git/fsmonitor.sh\n"
            f'[filter "evil"]\n\tclean = sh {script} clean\n\tsmudge = sh {script} smudge\n\trequired = true\n'
            f'[filter "evilproc"]\n\tprocess = sh {script} process\n\trequired = true\n'
            f'[diff "evil"]\n\ttextconv = sh {script} textconv\n'
            "[include]\n\tpath = extra.config\n"
            f"[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = {script}\n"
            "[user]\n\tname = Dev\n\temail = dev@example.test\n"
        )
    hooks = git_dir / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in HOOKS:
        (hooks / name).write_text(f'#!/bin/sh\ntouch "{markers}/hook-{name}"\nexit 0\n')
        (hooks / name).chmod(0o755)
    if not stale_stat:
        return
    # make every tracked file look modified to git's stat check, so status has to clean-filter them
    for path in repo.rglob("*"):
        if path.is_file() and ".git" not in path.relative_to(repo).parts:
            os.utime(path, ns=(1_000_000_000, 1_000_000_000))


def _plain_git_runs_the_plant(repo: Path, markers: Path) -> set[str]:
    """Proof that the plant is live: an unhardened ``git status`` in a copy runs its programs."""
    import shutil
    import subprocess

    probe_markers = markers.parent / "probe-markers"
    probe = markers.parent / "probe-repo"
    shutil.copytree(repo, probe, symlinks=True)
    for script in (probe / ".git" / "x.sh", probe / ".git" / "fsmonitor.sh", *(probe / ".git" / "hooks").iterdir()):
        script.write_text(script.read_text().replace(str(markers), str(probe_markers)))
    probe_markers.mkdir()
    subprocess.run(["git", "status"], cwd=probe, capture_output=True, timeout=60)
    found = {p.name for p in probe_markers.iterdir()}
    shutil.rmtree(probe)
    return found


def _baseline_of(folder: Path, scratch: Path) -> Any:
    from codebox_tui.bundle.baseline import take_baselines
    from codebox_tui.contracts.runtime import MountSpec

    return take_baselines(
        [MountSpec(source=str(folder), target="/wordpress/wp-content/plugins/demo", mode="readwrite")], scratch
    )[0]


def test_baseline_of_a_host_planted_repository_runs_none_of_its_programs(tmp_path: Path) -> None:
    repo, markers = tmp_path / "planted", tmp_path / "markers"
    build_evil_repo(repo, markers)
    assert "fsmonitor" in _plain_git_runs_the_plant(repo, markers)  # the plant works on plain git
    baseline = _baseline_of(repo, tmp_path / "scratch")
    assert sorted(p.name for p in markers.iterdir()) == []
    assert baseline.strategy == "snapshot"
    from tests.factories.apply_back import BASELINE

    with baseline.reader() as read:  # the work tree's bytes, no git program run
        assert {rel: read(rel) for rel in BASELINE} == BASELINE


def test_filtered_files_are_baselined_from_the_work_tree_without_running_the_filter(tmp_path: Path) -> None:
    """What git-lfs users rely on: a file with a ``filter`` attribute is baselined as it is in the work
    tree before boot (its checked-out form), not from the raw blob, and the driver never runs."""
    repo, markers = tmp_path / "lfs-like", tmp_path / "markers"
    markers.mkdir()
    repo.mkdir()
    (repo / ".gitattributes").write_text("*.bin filter=fake\n")
    (repo / "asset.bin").write_text("POINTER oid sha256:abc\n")
    (repo / "plain.php").write_text("<?php\n")
    _plain_git(repo, "init", "-q", "-b", "main")
    _plain_git(repo, "add", "-A")
    _plain_git(repo, "-c", "user.name=Dev", "-c", "user.email=dev@example.test", "commit", "-q", "-m", "c")
    (repo / "asset.bin").write_bytes(b"REAL CONTENT\x00\x01\n")  # what the smudge filter checked out
    with (repo / ".git" / "config").open("a") as config:
        config.write(f'[filter "fake"]\n\tsmudge = touch {markers}/smudge\n\tclean = touch {markers}/clean\n')
    (repo / "link.bin").symlink_to("/etc/hostname")  # never read through a link
    baseline = _baseline_of(repo, tmp_path / "scratch")
    assert baseline.strategy == "snapshot"
    with baseline.reader() as read:
        assert read("asset.bin") == b"REAL CONTENT\x00\x01\n"
        assert read("plain.php") == b"<?php\n"
    assert "link.bin" not in baseline.index
    assert sorted(p.name for p in markers.iterdir()) == []


def test_git_adapter_on_a_planted_repository_runs_none_of_its_programs(tmp_path: Path) -> None:
    from store.apply import apply_decision
    from store.db import Store
    from store.decisions import decide
    from tests.factories.apply_back import capture, expected_tree, tree

    cap = capture(tmp_path)
    repo, markers = tmp_path / "target-repo", tmp_path / "markers"
    build_evil_repo(repo, markers, stale_stat=False)
    with Store.open(tmp_path / "home" / "codebox.sqlite3") as store:
        decision = decide(store, str(cap.bundle_dir), "approve", approver="ana")
        result = apply_decision(store, decision.id, "git", repo, options={"branch": "codebox/evil", "commit": "1"})
    assert result.status == "committed"
    assert sorted(p.name for p in markers.iterdir()) == []
    applied = {k: v for k, v in tree(repo).items() if k not in ("notes.md", ".gitattributes")}
    assert applied == expected_tree(["demo.php", "readme.txt", "includes/old.php", "includes/new/extra.php"])


def test_hostgit_runs_nothing_a_planted_repository_configures(tmp_path: Path) -> None:
    """The git layer itself, beyond what Codebox runs today: status, archive, diff with textconv, checkout
    (smudge), add (clean), commit (hooks, signing), switch (post-checkout)."""
    from codebox_tui.bundle.hostgit import HostGit

    repo, markers = tmp_path / "planted", tmp_path / "markers"
    build_evil_repo(repo, markers)
    assert _plain_git_runs_the_plant(repo, markers)
    (repo / "readme.txt").write_text("changed\n")
    git = HostGit(repo)
    for args in (
        ["status"],
        ["archive", "--format=tar", "HEAD"],
        ["diff", "HEAD"],
        ["diff", "--textconv", "HEAD"],
        ["log", "-p", "-1"],
        ["add", "-A"],
        ["commit", "-q", "-m", "x"],
        ["switch", "-q", "-c", "other"],
        ["checkout", "-q", "main"],
        ["checkout", "HEAD", "--", "."],
        ["gc", "--auto"],
    ):
        done = git.run(*args)
        assert sorted(p.name for p in markers.iterdir()) == [], (args, done.stderr)
    assert git.run("log", "-1", "--format=%s").stdout.strip() == b"x"  # the commit really happened, unsigned


@pytest.mark.native
def test_repository_planted_by_php_runs_nothing_on_the_next_run(tmp_path: Path) -> None:
    """First run: PHP writes a complete malicious repository into a read-write mount that is not a work
    tree. Second run on that folder: taking its baseline must run none of the planted programs."""
    import base64

    from codebox_tui.errors import BadInputError
    from codebox_tui.runtime.mounts import parse_mount

    template, markers = tmp_path / "template", tmp_path / "markers"
    build_evil_repo(template, markers)
    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "plugin.php").write_text("<?php\n")
    target = "/wordpress/wp-content/plugins/p"
    files = sorted(p for p in template.rglob("*") if p.is_file())
    code = (
        "".join(
            f"@mkdir(dirname({_php_string(target + '/' + p.relative_to(template).as_posix())}), 0777, true);"
            f"file_put_contents({_php_string(target + '/' + p.relative_to(template).as_posix())}, "
            f"base64_decode('{base64.b64encode(p.read_bytes()).decode()}'));"
            + (
                f"chmod({_php_string(target + '/' + p.relative_to(template).as_posix())}, 0755);"
                if p.stat().st_mode & 0o111
                else ""
            )
            for p in files
        )
        + "echo 'planted';"
    )
    try:  # a write-through mount where the runtime distinguishes it (what a :live run allows)
        mount = f"{folder}:{target}:live"
        parse_mount(mount)
    except BadInputError:
        mount = f"{folder}:{target}:readwrite"
    with native_run(tmp_path / "artifacts-first", mounts=[mount]) as first:
        result = first.execute("wordpress.run-php", [f"code={code}"])
        assert result.stdout == "planted", result.stdout + result.stderr
        assert first.backend.name == NATIVE
    if (folder / ".git" / "config").is_file():  # the plant reached the host folder
        assert "fsmonitor" in _plain_git_runs_the_plant(folder, markers)
    with native_run(tmp_path / "artifacts-second", mounts=[mount]) as second:
        result = second.execute("wordpress.run-php", ["code=echo 'second';"])
        assert result.stdout == "second"
    assert sorted(p.name for p in markers.iterdir()) == []


# -- 3. a journal in the target is never read -------------------------------------------------------
def _planted_journal(outside: Path) -> dict[str, bytes]:
    """Files of a ``.codebox-apply`` folder as the pre-fix journal format read them: roll back by
    deleting ``victim.txt`` (an "added" entry whose staged file is gone) and by moving the attacker's
    ``old/1`` over ``written.txt``, both outside the target."""
    journal = {
        "version": 1,
        "state": "prepared",
        "entries": [
            {"path": f"../{outside.name}/victim.txt", "staged": "new/0"},
            {"path": f"../{outside.name}/written.txt", "backup": "old/1"},
        ],
        "created_dirs": [],
    }
    return {
        ".codebox-apply/journal.json": json.dumps(journal).encode(),
        ".codebox-apply/old/1": b"written by the sandbox\n",
        ".codebox-apply/new/.keep": b"",
    }


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("precious\n")
    return outside


def _outside_state(outside: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(outside.iterdir())}


def _codebox(home: Path, *args: str) -> Any:
    """``codebox ARGS`` through the real entry point in this process (a refusal, a query or a recovery: nothing
    here starts a sandbox, and a new Python process would cost over a CPU-second of imports)."""
    return codebox_in_process(home, *args)


def _assert_journal_attack_fails(
    tmp_path: Path, bundle_dir: Path, target: Path, outside: Path, approved: list[str]
) -> None:
    from codebox_tui.errors import ConflictError
    from store.apply import apply_decision
    from store.db import Store
    from store.decisions import decide

    before = _outside_state(outside)
    home = tmp_path / "home"
    with Store.open(home / "codebox.sqlite3") as store:
        decision = decide(store, str(bundle_dir), "approve-files", approver="ana", files=approved)
        with pytest.raises(ConflictError) as refused:
            apply_decision(store, decision.id, "directory", target)
    assert refused.value.code == "foreign-apply-staging", refused.value
    assert _outside_state(outside) == before
    recovered = _codebox(home, "apply-recover", str(target), "--json")
    assert recovered.returncode == 5, recovered.stdout + recovered.stderr
    assert "foreign-apply-staging" in recovered.stdout + recovered.stderr
    assert "Traceback" not in recovered.stderr
    assert _outside_state(outside) == before
    assert (target / ".codebox-apply" / "journal.json").is_file()  # left for the user to inspect


def test_unsafe_paths_in_a_home_journal_are_refused(tmp_path: Path) -> None:
    """Defence in depth: even Codebox's own journal (in CODEBOX_HOME) is validated before recovery acts."""
    from codebox_tui.errors import ConflictError
    from store.journal import JOURNAL_VERSION, STAGING_DIR, journal_path, recover

    outside = _outside(tmp_path)
    before = _outside_state(outside)
    target = tmp_path / "target"
    (target / STAGING_DIR / "old").mkdir(parents=True)
    (target / STAGING_DIR / "old" / "1").write_text("x")
    journals = tmp_path / "journals"
    journals.mkdir()
    info = (target / STAGING_DIR).lstat()
    for entries in (
        [{"path": "../outside/victim.txt", "staged": "new/0"}],
        [{"path": "a/../../outside/victim.txt", "staged": "new/0"}],
        [{"path": "ok.txt", "backup": "../../outside/victim.txt"}],
        [{"path": str(outside / "victim.txt"), "staged": "new/0"}],
    ):
        journal_path(target, journals).write_text(
            json.dumps(
                {
                    "version": JOURNAL_VERSION,
                    "state": "prepared",
                    "target": os.path.realpath(target),
                    "entries": entries,
                    "created_dirs": [],
                    "staging_ident": [info.st_dev, info.st_ino],
                }
            )
        )
        with pytest.raises(ConflictError) as refused:
            recover(target, journals=journals)
        assert refused.value.code == "apply-journal-invalid"
        assert _outside_state(outside) == before
    (target / "link").symlink_to(outside)
    journal_path(target, journals).write_text(
        json.dumps(
            {
                "version": JOURNAL_VERSION,
                "state": "prepared",
                "target": os.path.realpath(target),
                "entries": [{"path": "link/victim.txt", "staged": "new/0"}],
                "created_dirs": [],
                "staging_ident": [info.st_dev, info.st_ino],
            }
        )
    )
    with pytest.raises(ConflictError, match="symlink"):
        recover(target, journals=journals)
    assert _outside_state(outside) == before


def test_journal_planted_on_the_host_is_never_read(tmp_path: Path) -> None:
    from tests.factories.apply_back import CHANGES, capture, write_tree

    outside = _outside(tmp_path)
    changes = {rel: data for rel, data in CHANGES.items() if data is not None}
    cap = capture(tmp_path, changes)
    target = tmp_path / "mount"  # the read-write mount the sandbox changed: already in the after state
    write_tree(target, _planted_journal(outside))
    _assert_journal_attack_fails(tmp_path, cap.bundle_dir, target, outside, sorted(changes))


@pytest.mark.native
def test_journal_planted_by_php_is_never_read(tmp_path: Path) -> None:
    from codebox_tui.errors import BadInputError
    from codebox_tui.runtime.mounts import parse_mount
    from tests.factories.apply_back import BASELINE, CHANGES, write_tree

    outside = _outside(tmp_path)
    folder = tmp_path / "plugin"
    write_tree(folder, BASELINE)
    target = "/wordpress/wp-content/plugins/demo"
    changes = {rel: data for rel, data in CHANGES.items() if data is not None}
    plant = {**changes, **_planted_journal(outside)}
    code = (
        "".join(
            f"@mkdir(dirname({_php_string(target + '/' + rel)}), 0777, true);"
            f"file_put_contents({_php_string(target + '/' + rel)}, {_php_string(data.decode())});"
            for rel, data in plant.items()
        )
        + "echo 'planted';"
    )
    try:
        mount = f"{folder}:{target}:live"
        parse_mount(mount)
    except BadInputError:
        mount = f"{folder}:{target}:readwrite"
    with native_run(tmp_path / "artifacts", mounts=[mount]) as run:
        result = run.execute("wordpress.run-php", [f"code={code}"])
        assert result.stdout == "planted", result.stdout + result.stderr
        summary = run.capture()
    bundle_dir = Path(getattr(summary, "directory", None) or getattr(summary, "path", None) or run.run_dir)
    assert recorded_backend(bundle_dir) == NATIVE
    from codebox_tui.bundle.reader import load_bundle

    assert "apply-staging-folder-in-mount" in load_bundle(bundle_dir).review.riskFlags
    if not (folder / ".codebox-apply").exists():  # a copy-on-write mount kept the plant in the sandbox
        write_tree(folder, plant)  # what a :live run would have left
    _assert_journal_attack_fails(tmp_path, bundle_dir, folder, outside, sorted(changes))


# -- 4. smaller holes ---------------------------------------------------------------------------------
def test_a_fifo_in_a_bundle_never_blocks_verify_or_show(tmp_path: Path) -> None:
    import shutil

    from tests.factories.apply_back import capture

    cap = capture(tmp_path)
    for rel in ("manifest.json", "files/review.json", "files/changed-files.json"):
        bundle = tmp_path / f"bundle-{rel.replace('/', '-')}"
        shutil.copytree(cap.bundle_dir, bundle)
        (bundle / rel).unlink()
        os.mkfifo(bundle / rel)
        verified = _codebox(tmp_path / "home", "artifacts", "verify", str(bundle), "--json")
        assert verified.returncode == 1, verified.stdout + verified.stderr
        codes = {v["code"] for v in json.loads(verified.stdout)["violations"]}
        assert codes & {"unsafe-file", "missing-file"}, codes
        shown = _codebox(tmp_path / "home", "artifacts", "show", str(bundle), "--json")
        assert "Traceback" not in shown.stderr
        assert shown.returncode != 0 or json.loads(shown.stdout)["valid"] is False


def test_a_forged_mode_change_is_refused_by_the_git_adapter(tmp_path: Path) -> None:
    from codebox_tui.errors import ConflictError
    from store.apply import apply_decision
    from store.db import Store
    from store.decisions import decide
    from tests.factories.apply_back import capture, git_repo, reseal, tree, verify_ok

    cap = capture(tmp_path)
    patch = cap.bundle_dir / "files" / "patch.diff"
    text = patch.read_text()
    header = "diff --git a/demo.php b/demo.php\n"
    assert header in text
    patch.write_text(text.replace(header, header + "old mode 100644\nnew mode 100755\n"))
    reseal(cap.bundle_dir)  # the forger re-hashes everything; the reviewer approves what changed-files lists
    assert verify_ok(cap.bundle_dir)
    entry = next(
        f
        for f in json.loads((cap.bundle_dir / "files" / "changed-files.json").read_text())["files"]
        if f["relativePath"] == "demo.php"
    )
    assert entry.get("afterMode") in (None, "100644")
    repo = git_repo(cap, tmp_path)
    before = tree(repo)
    with Store.open(tmp_path / "home" / "codebox.sqlite3") as store:
        decision = decide(store, str(cap.bundle_dir), "approve-files", approver="ana", files=["demo.php"])
        with pytest.raises(ConflictError) as refused:
            apply_decision(store, decision.id, "git", repo)
    assert refused.value.code == "unapproved-mode-change"
    assert not os.stat(repo / "demo.php").st_mode & 0o111
    assert tree(repo) == before


def _deep(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


@pytest.mark.parametrize(
    "command",
    ["recipe validate", "recipe-run --dry-run --json", "validate-blueprint", "run --policy", "artifacts show"],
)
def test_deeply_nested_json_is_a_clear_error_naming_the_file(command: str, tmp_path: Path) -> None:
    doc = tmp_path / "deep.json"
    doc.write_text(_deep(50_000))
    if command == "artifacts show":
        from tests.factories.apply_back import capture

        bundle = capture(tmp_path).bundle_dir
        (bundle / "manifest.json").write_text(_deep(50_000))
        args = ["artifacts", "show", str(bundle)]
        named = "manifest.json"
    elif command == "run --policy":
        args = [
            "run",
            "--policy",
            str(doc),
            "--command",
            "wordpress.run-php",
            "--arg",
            "code=1",
            "--artifacts",
            str(tmp_path / "artifacts"),
        ]
        named = str(doc)
    else:
        words = command.split()
        args = [*words[:-2], str(doc), *words[-2:]] if "--dry-run" in words else [*words, str(doc)]
        named = str(doc)
    done = _codebox(tmp_path / "home", *args)
    output = done.stdout + done.stderr
    assert "Traceback" not in output and "RecursionError" not in output, output[-2000:]
    assert done.returncode != 0, output[-2000:]
    assert named in output and ("deeper than" in output or "not valid JSON" in output), output[-2000:]
    if command == "run --policy":
        assert not (tmp_path / "artifacts").exists()


@pytest.mark.parametrize("args", [["--php", "5.6", "--arg", "code=echo 1;"], ["--arg", "code-file=missing.php"]])
def test_bad_php_version_and_missing_code_file_fail_before_anything_starts(args: list[str], tmp_path: Path) -> None:
    artifacts = tmp_path / "artifacts"
    done = _codebox(tmp_path / "home", "run", "--command", "wordpress.run-php", *args, "--artifacts", str(artifacts))
    assert done.returncode == 2, done.stdout + done.stderr
    assert ("--php" in done.stderr) or ("code-file" in done.stderr)
    assert "Traceback" not in done.stderr
    assert not artifacts.exists()  # no run folder, no events: nothing started
    assert not (tmp_path / "home" / "sandboxes").exists()
