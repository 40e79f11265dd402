"""What a SIGKILLed run leaves on the host is taken back (docs/security.md, "Leftovers after a kill"; issues 25
and 28).

A real ``codebox run --backend native`` with a ``:live`` mount and a copy-on-write one is SIGKILLed while its
command runs, after PHP created files in the live folder and planted a link in it to a host file of another
owner. At that instant the live folder is the sandbox's own host uid's (runtime/sandbox_ids.py) and the
sandbox's data ``tmpfs`` is mounted under its folder, holding the overlay (and the changes) of the copy-on-write
mount's private copy. The killed process's mount guard, with no other Codebox process involved, detaches that
``tmpfs`` and gives every entry of the folder back to its owner, as a normal end does (what the sandbox created
too), without following the planted link; the next ``codebox run`` in the same home finds nothing left to give
back and removes the dead sandbox's folder. (When the guard is gone too, the next run gives the folder back:
tests/unit/test_leftover_records.py.)

When the guard is gone too, the sweep's removal detaches: the real reaper detaches a real leftover ``tmpfs``
in one abandoned folder and removes the folder, while a link named like the mount point in another one (to a
mount elsewhere on the host) makes nothing outside unmounted or removed.

Root only: the uid drop and the data ``tmpfs`` exist when Codebox runs as root.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from codebox_tui.runtime.leftover_mounts import mount_points
from codebox_tui.runtime.native_limits import ProcessCap
from codebox_tui.runtime.reaper import OWNER_FILE
from codebox_tui.runtime.sandbox_ids import FIRST_ID
from tests.factories.paths import REPO
from tests.factories.sigkill import ended_pid
from tests.factories.waiting import process_finished, wait_until

pytestmark = [
    pytest.mark.native,
    pytest.mark.sigkill,
    pytest.mark.skipif(os.geteuid() != 0, reason="the uid drop and the data tmpfs need Codebox as root"),
]

LIVE = "/wordpress/wp-content/plugins/live"
COPY_ON_WRITE = "/wordpress/wp-content/plugins/copied"
VICTIM_OWNER = 4242
# The command of the killed run: writes in the live folder as the sandbox, plants a link to a host file (a
# child process may: `ln` makes a link whatever it names), says it is done, then holds until it is killed.
HOLD = r"""<?php
$l = '__LIVE__';
file_put_contents("$l/open.txt", 'changed by the sandbox');
file_put_contents("$l/made.txt", 'made by the sandbox');
mkdir("$l/made-dir");
file_put_contents("$l/made-dir/inner.txt", 'inner');
shell_exec('ln -s ' . escapeshellarg('__VICTIM__') . ' ' . escapeshellarg("$l/link-to-victim"));
file_put_contents("$l/ready", 'ready');
sleep(600);
"""


def _owners(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.lstat().st_uid for p in [folder, *folder.rglob("*")]}


def _codebox(*args: str) -> list[str]:
    return [sys.executable, "-m", "codebox_tui", "run", "--backend", "native", "-q", *args]


def _env(home: Path, tmp: Path) -> dict[str, str]:
    return {**os.environ, "CODEBOX_HOME": str(home), "TMPDIR": str(tmp), "PYTHONPATH": str(REPO)}


@dataclass
class Killed:
    home: Path
    artifacts: Path
    live: Path
    victim: Path
    sandbox_dir: Path  # the dead sandbox's folder
    copies_dir: Path  # the dead run's folder for its private copies
    copy_in_data_at_kill: bool  # the private copy's overlay was mounted in the data tmpfs
    owners_at_kill: dict[str, int]
    sandbox_uid: int  # the uid the journal recorded the folder as handed to
    mounted_at_kill: bool
    detached_alone: bool
    journals_at_kill: set[str]
    given_back_alone: bool  # every owner back before any other Codebox process ran
    owners_before_next_run: dict[str, int]
    journals_before_next_run: set[str]
    next_run: subprocess.CompletedProcess[str]


def _journals(home: Path) -> set[str]:
    folder = home / "live-owners"
    return {p.name for p in folder.iterdir()} if folder.is_dir() else set()


@pytest.fixture(scope="module")
def killed(tmp_path_factory: pytest.TempPathFactory) -> Killed:
    # the test process's home: its prepared install and compiled-script seed are reused (a fresh home would
    # build both first)
    home = Path(os.environ["CODEBOX_HOME"])
    base = tmp_path_factory.mktemp("killed-run")
    tmp, live, artifacts = base / "tmp", base / "live", base / "artifacts"
    tmp.mkdir()
    live.mkdir()
    (live / "plugin.php").write_text("<?php\n/* Plugin Name: Live */\n")
    (live / "open.txt").write_text("the user's\n")
    copied = base / "copied"
    copied.mkdir()
    (copied / "copied.php").write_text("<?php\n/* Plugin Name: Copied */\n")
    victim = base / "victim.txt"
    victim.write_text("another user's file\n")
    os.chown(victim, VICTIM_OWNER, VICTIM_OWNER)
    code = HOLD.replace("__LIVE__", LIVE).replace("__VICTIM__", str(victim))
    sandboxes_before = set((home / "sandboxes").glob("sandbox-native-*"))
    copies_before = set((home / "sandboxes").glob("sandbox-copies-*"))
    journals_before = _journals(home)
    run = subprocess.Popen(
        _codebox(
            "-m",
            f"{live}:{LIVE}:live",
            "-m",
            f"{copied}:{COPY_ON_WRITE}",
            "-c",
            "wordpress.run-php",
            "-a",
            "code=" + code,
            "--timeout",
            "600s",
            "--artifacts",
            str(artifacts),
        ),
        cwd=REPO,
        env=_env(home, tmp),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert wait_until(lambda: (live / "ready").exists() or run.poll() is not None, timeout=240), "no command ran"
        assert run.poll() is None, run.communicate()[1][-2000:]
        sandboxes = sorted(set((home / "sandboxes").glob("sandbox-native-*")) - sandboxes_before)
        mounted_at_kill = bool(sandboxes) and str(sandboxes[0] / "data") in mount_points()
        journals_at_kill = _journals(home) - journals_before
        records = [
            json.loads(p.read_text()) for j in journals_at_kill for p in (home / "live-owners" / j).glob("*.json")
        ]
        copies = sorted(set((home / "sandboxes").glob("sandbox-copies-*")) - copies_before)
        copy_in_data_at_kill = (
            len(sandboxes) == len(copies) == 1
            and str(sandboxes[0] / "data" / "mount-1") in mount_points()  # its overlay, changes in the data
            and (sandboxes[0] / "data" / "upper-1").is_dir()
        )
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=60)
    assert len(sandboxes) == 1 and len(copies) == 1, (sandboxes, copies)
    owners_at_kill = _owners(live)
    # the killed process's mount guard detaches its data file system and gives the live folder back, with no
    # other Codebox process involved
    detached_alone = wait_until(lambda: str(sandboxes[0] / "data") not in mount_points(), timeout=60)
    given_back_alone = wait_until(
        lambda: set(_owners(live).values()) == {0} and not journals_at_kill & _journals(home), timeout=60
    )
    owners_before_next_run, journals_before_next_run = _owners(live), _journals(home)
    # the sandbox's processes end with the killed run (its bubblewrap dies with its parent): none is left in its
    # process group, so nothing writes in the live folder after it is given back
    group = ProcessCap.existing(sandboxes[0].name)
    assert wait_until(lambda: group.current() in (None, 0), timeout=60), group.current()
    next_run = subprocess.run(
        _codebox("-c", "wordpress.run-php", "-a", "code=<?php echo 'next';", "--artifacts", str(artifacts)),
        cwd=REPO,
        env=_env(home, tmp),
        capture_output=True,
        text=True,
        timeout=300,
    )
    return Killed(
        home,
        artifacts,
        live,
        victim,
        sandboxes[0],
        copies[0],
        copy_in_data_at_kill,
        owners_at_kill,
        int(records[0]["sandboxUid"]) if len(records) == 1 else -1,
        mounted_at_kill,
        detached_alone,
        journals_at_kill,
        given_back_alone,
        owners_before_next_run,
        journals_before_next_run,
        next_run,
    )


def test_the_killed_run_left_its_live_folder_handed_over_and_its_data_mounted(killed: Killed) -> None:
    """The state to repair really was there at the kill (else the other tests prove nothing)."""
    assert len(killed.journals_at_kill) == 1, killed.journals_at_kill  # written before the hand-over
    assert killed.sandbox_uid >= FIRST_ID, killed.sandbox_uid  # the sandbox's own uid, recorded with the owners
    assert killed.owners_at_kill["made.txt"] == killed.sandbox_uid, killed.owners_at_kill
    assert killed.owners_at_kill["."] == killed.sandbox_uid, killed.owners_at_kill
    assert killed.owners_at_kill["link-to-victim"] == killed.sandbox_uid, killed.owners_at_kill
    assert killed.mounted_at_kill


def test_the_guard_gives_the_live_folder_back_without_another_run(killed: Killed) -> None:
    """At once, by the killed process's guard: nothing waits for a next run (the home may never be used again)."""
    assert killed.given_back_alone, killed.owners_before_next_run
    # every entry, what the sandbox created too (as a normal end)
    assert set(killed.owners_before_next_run.values()) == {0}, killed.owners_before_next_run
    assert (killed.live / "open.txt").read_text() == "changed by the sandbox"  # live: its writes stay
    assert not killed.journals_at_kill & killed.journals_before_next_run  # the journal is gone once applied


def test_the_next_run_finds_nothing_left_to_give_back(killed: Killed) -> None:
    assert killed.next_run.returncode == 0, killed.next_run.stderr[-2000:]
    assert set(_owners(killed.live).values()) == {0}
    events = [
        json.loads(line) for path in killed.artifacts.glob("*/events.jsonl") for line in path.read_text().splitlines()
    ]
    restored = [e["data"]["folder"] for e in events if e["type"] == "runtime.owners-restored"]
    assert restored == [], restored


def test_the_give_back_does_not_follow_a_link_the_sandbox_planted(killed: Killed) -> None:
    assert (killed.live / "link-to-victim").is_symlink()
    assert killed.victim.stat().st_uid == VICTIM_OWNER  # followed, it would be root's now
    assert killed.victim.read_text() == "another user's file\n"


def test_the_killed_runs_data_file_system_is_detached_by_its_guard(killed: Killed) -> None:
    """Before any other Codebox process runs (the home may never be used again)."""
    assert killed.detached_alone


def test_the_next_run_removes_the_dead_sandboxs_folder(killed: Killed) -> None:
    assert killed.next_run.returncode == 0, killed.next_run.stderr[-2000:]
    assert wait_until(lambda: not killed.sandbox_dir.exists(), timeout=60), sorted(killed.sandbox_dir.rglob("*"))[:20]
    assert not [p for p in mount_points() if p.startswith(str(killed.sandbox_dir))], mount_points()


def test_the_killed_runs_private_copy_was_in_its_data_and_goes_with_it(killed: Killed) -> None:
    """The copy-on-write mount's overlay was mounted in the data ``tmpfs`` (its changes inside the disk budget):
    detached with it by the guard, and the run's copies folder removed by the next run, no mount left under it."""
    assert killed.copy_in_data_at_kill
    assert killed.next_run.returncode == 0, killed.next_run.stderr[-2000:]
    assert wait_until(lambda: not killed.copies_dir.exists(), timeout=60), sorted(killed.copies_dir.rglob("*"))[:20]
    assert not [p for p in mount_points() if p.startswith(str(killed.copies_dir))], mount_points()


# -- the sweep's removal, against a real leftover mount and a planted link ---------------------------------


def _mount_tmpfs(folder: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(b"tmpfs", str(folder).encode(), b"tmpfs", 0, b"size=1m") != 0:
        pytest.fail(f"cannot mount a tmpfs on {folder}: {os.strerror(ctypes.get_errno())}")


def _unmount(folder: Path) -> None:
    if str(folder) in mount_points():
        ctypes.CDLL(None, use_errno=True).umount2(str(folder).encode(), 2)


@pytest.fixture()
def victim_mount(tmp_path: Path) -> Iterator[Path]:
    """A mount elsewhere on the host, with a file in it: what a planted link names."""
    folder = tmp_path / "elsewhere" / "data"
    folder.mkdir(parents=True)
    _mount_tmpfs(folder)
    (folder / "keep.txt").write_text("not the sandbox's\n")
    yield folder
    _unmount(folder)


def _abandoned(sandboxes: Path, name: str, pid: int) -> Path:
    folder = sandboxes / name
    folder.mkdir(parents=True)
    (folder / OWNER_FILE).write_text(str(pid))
    return folder


def test_the_sweep_detaches_a_leftover_mount_and_never_follows_a_link_named_like_one(
    tmp_path: Path, victim_mount: Path
) -> None:
    dead_pid = ended_pid()
    sandboxes = tmp_path / "home" / "sandboxes"
    left = _abandoned(sandboxes, "sandbox-native-left", dead_pid)
    (left / "data").mkdir()
    _mount_tmpfs(left / "data")
    (left / "data" / "wp-content").mkdir()
    planted = _abandoned(sandboxes, "sandbox-native-planted", dead_pid)
    (planted / "data").symlink_to(victim_mount)  # named like the mount point, pointing at another mount
    (sandboxes / "sandbox-native-linked").symlink_to(victim_mount.parent)  # a whole folder that is a link
    try:
        reaper = subprocess.run(
            [
                sys.executable,
                "-m",
                "codebox_tui.runtime.reaper",
                str(left),
                str(planted),
                str(sandboxes / "sandbox-native-linked"),
            ],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert reaper.returncode == 0, reaper.stderr
        assert str(left / "data") not in mount_points()
        assert not left.exists() and not planted.exists() and not (sandboxes / "sandbox-native-linked").exists()
        assert str(victim_mount) in mount_points()  # nothing outside was unmounted …
        assert (victim_mount / "keep.txt").read_text() == "not the sandbox's\n"  # … nor emptied
    finally:
        _unmount(left / "data")
    assert process_finished(dead_pid)
