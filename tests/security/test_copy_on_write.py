"""Copy-on-write read-write mounts (README, "Mounts"), attacked for real.

PHP inside a real Playground sandbox edits, creates, deletes and chmods files of a read-write mount,
plants files in never-captured folders (``.git``, ``.codebox-apply``, ``node_modules``) and tries to
write through symlinks. The user's folder must be byte-for-byte unchanged after the run (a full tree
hash: contents, modes, symlink targets, git's view of the index), the bundle must show the edits, and
``codebox apply`` of an approved decision must write exactly the approved files — never anything in a
never-captured folder, even when a tampered bundle lists such files. ``:live`` still writes through.

The attack on a copy-on-write mount runs on Playground: writes through the folder's symbolic links are stopped
there by PHP's virtual file system (docs/security.md, layer 1), a defence of its own. ``:live`` and the journal planted through it share one
native sandbox (real PHP in real bubblewrap): what they test is the mount mode, the bundle and apply-back's
recovery on the host, the same on both backends.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.factories.holds import codebox_in_process
from tests.factories.native import native_run, recorded_backend
from tests.factories.paths import REPO

TARGET = "/wordpress/wp-content/plugins/victim"
FILES = {
    "victim.php": b"<?php\n/* Plugin Name: Victim */\nfunction victim() {\n\treturn 1;\n}\n",
    "lib/keep.php": b"<?php\n// untouched\n",
    "sub/del.txt": b"to be deleted by the sandbox\n",
    "run.sh": b"#!/bin/sh\necho hi\n",
    "node_modules/pkg/index.js": b"module.exports = 1;\n",
    "nm/readme.txt": b"a normal folder\n",
}

ATTACK = r"""<?php
$d = '__TARGET__';
$r = [];
$r['edit'] = file_put_contents("$d/victim.php", "<?php\n/* Plugin Name: Victim */\nfunction victim() {\n\treturn 2;\n}\n");
$r['create'] = file_put_contents("$d/lib/new.php", "<?php\n// created by the sandbox\n");
$r['delete'] = unlink("$d/sub/del.txt");
$r['chmod'] = chmod("$d/run.sh", 0644);
$r['git'] = @mkdir("$d/.git/hooks", 0777, true) && @file_put_contents("$d/.git/config", "[core]\n\thooksPath = /tmp\n");
$r['journal'] = @mkdir("$d/.codebox-apply", 0777, true) | (bool) file_put_contents("$d/.codebox-apply/journal.json", '{"writes": []}');
$r['bin'] = @mkdir("$d/node_modules/.bin", 0777, true) | (bool) file_put_contents("$d/node_modules/.bin/x", "#!/bin/sh\necho pwned\n");
$r['nm'] = @mkdir("$d/nm/.bin", 0777, true) | (bool) file_put_contents("$d/nm/.bin/x", "#!/bin/sh\necho pwned\n");
$r['dotgit'] = @mkdir("$d/dotgit/hooks", 0777, true) | (bool) file_put_contents("$d/dotgit/hooks/pre-commit", "#!/bin/sh\necho pwned\n");
$r['through-relative-link'] = @file_put_contents("$d/rel-link/canary.txt", "overwritten");
$r['through-absolute-link'] = @file_put_contents("$d/abs-link/canary.txt", "overwritten");
$r['new-link'] = @symlink('/etc', "$d/etc-link");
echo json_encode($r);
"""


def tree_hash(root: Path) -> dict[str, str]:
    """Every entry under ``root`` (``.git`` included, never following a link): type, mode, and the
    sha256 of a file's bytes or a link's target. ``.git/index`` is git's own stat cache, which the
    baseline's ``git status`` may refresh: its entries are compared through ``git ls-files -s``."""
    out: dict[str, str] = {}
    for directory, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(directory) / name
            rel = path.relative_to(root).as_posix()
            info = path.lstat()
            mode = oct(stat.S_IMODE(info.st_mode))
            if stat.S_ISLNK(info.st_mode):
                out[rel] = f"link {mode} {os.readlink(path)}"
            elif stat.S_ISDIR(info.st_mode):
                out[rel] = f"dir {mode}"
            elif rel == ".git/index":
                staged = subprocess.run(["git", "-C", str(root), "ls-files", "-s"], capture_output=True, check=True)
                out[rel] = "index " + hashlib.sha256(staged.stdout).hexdigest()
            else:
                out[rel] = f"file {mode} {hashlib.sha256(path.read_bytes()).hexdigest()}"
    return dict(sorted(out.items()))


def make_user_folder(root: Path, outside: Path) -> Path:
    folder = root / "victim"
    for rel, data in FILES.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (folder / "run.sh").chmod(0o755)
    outside.mkdir()
    (outside / "canary.txt").write_text("outside the folder\n")
    (folder / "rel-link").symlink_to(os.path.relpath(outside, folder))
    (folder / "abs-link").symlink_to(outside)
    git = ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "base"], check=True)
    return folder


def codebox(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "codebox_tui", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600
    )


@dataclass
class Attacked:
    folder: Path
    pristine: Path  # a copy of the folder taken before the run (an apply target for tampered bundles)
    outside: Path
    before: dict[str, str]
    after: dict[str, str]  # while the sandbox was still up
    after_capture: dict[str, str]  # once the sandbox was disposed and the bundle captured
    bundle_dir: Path
    php: dict[str, Any]


@pytest.fixture(scope="module")
def attacked(playground_session: Any, tmp_path_factory: pytest.TempPathFactory) -> Attacked:
    root = tmp_path_factory.mktemp("cow")
    outside = root / "outside"
    folder = make_user_folder(root, outside)
    pristine = root / "pristine"
    shutil.copytree(folder, pristine, symlinks=True)
    before = tree_hash(folder)
    with playground_session.new_run(root / "artifacts", mounts=[f"{folder}:{TARGET}"]) as run:
        result = run.execute("wordpress.run-php", ["code=" + ATTACK.replace("__TARGET__", TARGET)])
        after = tree_hash(folder)  # while the sandbox is still up: nothing may have reached the folder
        summary = run.capture()
    after_capture = tree_hash(folder)
    assert result.exitCode == 0, result.stderr
    php = json.loads(result.stdout)
    assert php["edit"] and php["create"] and php["delete"] and php["chmod"], php  # the sandbox really wrote
    return Attacked(folder, pristine, outside, before, after, after_capture, Path(summary.path), php)


def _changed(bundle_dir: Path) -> dict[str, dict[str, Any]]:
    doc = json.loads((bundle_dir / "files" / "changed-files.json").read_text())
    return {f["relativePath"]: f for f in doc["files"]} | {"__skipped__": doc.get("skipped", [])}


@pytest.mark.playground
def test_users_folder_is_byte_for_byte_unchanged(attacked: Attacked) -> None:
    assert attacked.after == attacked.before
    assert attacked.after_capture == attacked.before
    assert (attacked.outside / "canary.txt").read_text() == "outside the folder\n"


@pytest.mark.playground
def test_bundle_shows_the_edits_and_reports_what_was_planted(attacked: Attacked) -> None:
    changed = _changed(attacked.bundle_dir)
    skipped = changed.pop("__skipped__")
    assert changed["victim.php"]["status"] == "modified"
    assert changed["lib/new.php"]["status"] == "added"
    assert changed["sub/del.txt"]["status"] == "deleted"
    assert changed["run.sh"]["status"] == "modified" and changed["run.sh"]["afterMode"] == "100644"
    assert not [rel for rel in changed if rel.split("/")[0] in (".git", ".codebox-apply", "node_modules")]
    planted = {s["relativePath"] for s in skipped if s["reason"] == "changed-in-skipped-directory"}
    assert {".codebox-apply/journal.json", "node_modules/.bin/x"} <= planted
    links = {s["relativePath"] for s in skipped if s["reason"] == "symlink"}
    assert {"rel-link", "abs-link"} <= links
    review = json.loads((attacked.bundle_dir / "files" / "review.json").read_text())
    assert "changes-in-uncaptured-directories" in review["riskFlags"]
    metadata = json.loads((attacked.bundle_dir / "metadata.json").read_text())
    assert metadata["mountWriteModes"] == ["copy-on-write"]
    verified = codebox("artifacts", "verify", str(attacked.bundle_dir), "--json")
    assert verified.returncode == 0, verified.stdout + verified.stderr


@pytest.mark.playground
def test_apply_writes_exactly_the_approved_files(attacked: Attacked) -> None:
    target = attacked.folder  # the user's own folder: it changes only now, through apply-back
    before = attacked.before
    decided = codebox(
        "review", "approve-files", str(attacked.bundle_dir), "--file", "victim.php", "--file", "lib/new.php", "--json"
    )
    assert decided.returncode == 0, decided.stdout + decided.stderr
    decision_id = str(json.loads(decided.stdout)["id"])
    applied = codebox("apply", decision_id, "--adapter", "directory", "--target", str(target), "--json")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert sorted(json.loads(applied.stdout)["applied_files"]) == ["lib/new.php", "victim.php"]
    after = tree_hash(target)
    changed = {rel for rel in before.keys() | after.keys() if before.get(rel) != after.get(rel)}
    assert changed == {"victim.php", "lib/new.php"}
    assert (target / "victim.php").read_bytes().endswith(b"return 2;\n}\n")
    assert (target / "sub" / "del.txt").exists()


def _tamper(bundle_dir: Path, dest: Path) -> Path:
    """What an attacker who can write the bundle folder does: rename the sandbox's ``nm/`` and
    ``dotgit/`` files into ``node_modules/`` and ``.git/`` and re-seal every hash."""
    from tests.factories.apply_back import reseal

    shutil.copytree(bundle_dir, dest)
    for rel in ("files/changed-files.json", "files/patch.diff", "files/review.json"):
        path = dest / rel
        path.write_bytes(
            path.read_bytes()
            .replace(b"nm/.bin/x", b"node_modules/.bin/x")
            .replace(b"dotgit/hooks/pre-commit", b".git/hooks/pre-commit")
        )
    reseal(dest)
    return dest


@pytest.mark.playground
def test_apply_never_writes_never_captured_folders_even_from_a_tampered_bundle(
    attacked: Attacked, tmp_path: Path
) -> None:
    from store.apply import apply_decision
    from store.db import Store
    from store.decisions import decide, register_bundle

    tampered = _tamper(attacked.bundle_dir, tmp_path / "tampered")
    target = tmp_path / "victim"
    shutil.copytree(attacked.pristine, target, symlinks=True)
    before = tree_hash(target)
    store = Store.open(tmp_path / "store.sqlite3")  # the untampered bundle has the same Mode A id elsewhere
    register_bundle(store, tampered)
    decision = decide(
        store,
        str(tampered),
        "approve-files",
        approver="mallory",
        files=["victim.php", "node_modules/.bin/x", ".git/hooks/pre-commit"],
    )
    result = apply_decision(store, decision.id, "directory", target, audit_path=tmp_path / "audit.jsonl")
    assert result.applied_files == ["victim.php"]
    withheld = {w["file"]: w["folder"] for w in result.target["withheld"]}
    assert withheld == {"node_modules/.bin/x": "node_modules", ".git/hooks/pre-commit": ".git"}
    after = tree_hash(target)
    assert {rel for rel in before.keys() | after.keys() if before.get(rel) != after.get(rel)} == {"victim.php"}
    assert not (target / "node_modules" / ".bin").exists()
    assert not (target / ".git" / "hooks" / "pre-commit").exists()


@pytest.mark.parametrize("target", ["/wordpress", "/wordpress/", "/wordpress/wp-content"])
def test_mount_over_the_site_root_is_refused_before_boot(codebox_home: Path, tmp_path: Path, target: str) -> None:
    folder = tmp_path / "site"
    folder.mkdir()
    # the CLI's entry point in this process (tests/factories/holds.py): the refusal is made before anything boots
    out = codebox_in_process(
        codebox_home,
        "run",
        "--mount",
        f"{folder}:{target}",
        "--command",
        "wordpress.run-php",
        "--arg",
        "code=echo 1;",
        "--artifacts",
        str(tmp_path / "artifacts"),
        "--json",
    )
    assert out.returncode == 2, out.stdout + out.stderr
    failure = json.loads(out.stdout)
    assert failure["error"]["code"] == "invalid-mount-target"
    assert "would replace the WordPress site" in failure["error"]["message"]
    assert "[object Object]" not in out.stdout + out.stderr
    assert not (tmp_path / "artifacts").exists() or not any((tmp_path / "artifacts").iterdir())


PLANT_JOURNAL = r"""<?php
$d = '__TARGET__';
@mkdir("$d/.codebox-apply/old", 0777, true);
@mkdir("$d/.codebox-apply/new", 0777, true);
file_put_contents("$d/.codebox-apply/old/0", "pwned\n");
file_put_contents("$d/.codebox-apply/journal.json", json_encode(["version" => 1, "state" => "prepared",
    "entries" => [["path" => "../outside/victim.txt", "backup" => "old/0"],
                  ["path" => "../outside/delete-me.txt", "staged" => "new/1"]],
    "created_dirs" => []]));
echo 'planted';
"""


@dataclass
class LiveRun:
    folder: Path
    outside: Path
    written_while_up: str  # a.txt as the host saw it while the sandbox still ran
    wrote: Any  # the first command's result
    planted: Any  # the second command's result
    bundle_dir: Path


@pytest.fixture(scope="module")
def live_run(codebox_home: Path, tmp_path_factory: pytest.TempPathFactory) -> LiveRun:
    """One native sandbox with a ``:live`` mount: a command writes ``a.txt`` through it, a second plants an apply
    journal in it (PLANT_JOURNAL); then the bundle is captured."""
    root = tmp_path_factory.mktemp("live")
    folder = root / "live"
    folder.mkdir()
    (folder / "a.txt").write_text("before\n")
    outside = root / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("precious\n")
    (outside / "delete-me.txt").write_text("keep me\n")
    code = f"code=file_put_contents('{TARGET}/a.txt', \"after\\n\"); echo 'ok';"
    with native_run(root / "artifacts", mounts=[f"{folder}:{TARGET}:live"]) as run:
        wrote = run.execute("wordpress.run-php", [code])
        written_while_up = (folder / "a.txt").read_text()
        planted = run.execute("wordpress.run-php", ["code=" + PLANT_JOURNAL.replace("__TARGET__", TARGET)])
        summary = run.capture()
    return LiveRun(folder, outside, written_while_up, wrote, planted, Path(summary.path))


@pytest.mark.native
def test_live_mount_writes_through(live_run: LiveRun) -> None:
    assert live_run.wrote.exitCode == 0 and live_run.wrote.stdout == "ok", live_run.wrote.stderr
    assert live_run.written_while_up == "after\n"  # written through while the sandbox runs
    bundle = live_run.bundle_dir
    assert recorded_backend(bundle) == "native"
    metadata = json.loads((bundle / "metadata.json").read_text())
    assert metadata["mountWriteModes"] == ["live"]
    assert metadata["mounts"][0]["mode"] == "readwrite"  # the wire mode is unchanged
    review = json.loads((bundle / "files" / "review.json").read_text())
    assert "live-mount-written-through" in review["riskFlags"]
    assert _changed(bundle)["a.txt"]["status"] == "modified"


@pytest.mark.native
def test_a_journal_planted_through_a_live_mount_is_never_trusted(live_run: LiveRun) -> None:
    """``:live`` still lets the sandbox write the folder, so apply-back's crash recovery must not
    trust a journal it finds there: a planted one would move and delete files outside the folder."""
    result, folder, outside = live_run.planted, live_run.folder, live_run.outside
    assert result.exitCode == 0 and result.stdout == "planted", result.stdout + result.stderr
    assert (folder / ".codebox-apply" / "journal.json").exists()  # written through, as :live promises
    out = codebox("apply-recover", str(folder), "--json")
    assert out.returncode == 5, out.stdout + out.stderr
    assert json.loads(out.stdout)["error"]["code"] == "foreign-apply-staging"
    assert "Traceback" not in out.stderr
    assert (outside / "victim.txt").read_text() == "precious\n"
    assert (outside / "delete-me.txt").read_text() == "keep me\n"
