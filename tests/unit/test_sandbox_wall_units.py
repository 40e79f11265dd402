"""Pure parts of the sidecar wall (docs/security.md): bind selection, the bwrap command line, the
leftover sweep's ownership rules, --preview-bind validation."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from codebox_tui.runtime.confinement import Bind, bwrap_argv, covered, external_binds, in_system_view, readonly_dir


def test_external_binds_skip_the_sandboxes_root_and_merge_modes(tmp_path: Path) -> None:
    root = tmp_path / "sandboxes"
    (root / "sandbox-a" / "mount-0").mkdir(parents=True)
    live, other = tmp_path / "plugin", tmp_path / "fixtures"
    live.mkdir()
    other.mkdir()
    binds = external_binds(
        [(str(other), False), (str(live), False), (str(root / "sandbox-a" / "mount-0"), True), (str(live), True)], root
    )
    assert binds == (Bind(str(other), False), Bind(str(live), True))
    assert covered(str(live / "sub"), root, binds, writable=True)
    assert covered(str(root / "sandbox-a" / "mount-0"), root, (), writable=True)
    assert not covered(str(tmp_path / "elsewhere"), root, binds, writable=False)
    assert not covered(str(other), root, binds, writable=True)


def test_bwrap_argv_binds_only_what_the_sidecar_needs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("codebox_tui.runtime.confinement.drops_to_sandbox_uid", lambda: False)  # a normal user
    root = tmp_path / "sandboxes"
    live = tmp_path / "plugin"
    (live / ".git").mkdir(parents=True)
    argv = bwrap_argv(
        bwrap="/usr/bin/bwrap",
        node="/usr/bin/node",
        bridge_dir=tmp_path / "bridge",
        playground_home=tmp_path / "pg-home",
        sandboxes_root=root,
        tmp_dir=tmp_path / "t",
        env={"HOME": str(tmp_path / "pg-home")},
        binds=(Bind(str(live), True),),
        host_uid=None,
    )
    joined = " ".join(argv)
    assert "--die-with-parent" not in argv  # tied to the starting thread, not the process (bwrap_argv)
    for flag in (
        "--unshare-all",
        "--share-net",
        "--clearenv",
        "--uid 65534",
        "--gid 65534",
        "--cap-drop ALL",
        "--proc /proc",
        "--dev /dev",
        f"--bind {tmp_path / 't'} /tmp",
    ):
        assert flag in joined
    assert f"--bind {live} {live}" in joined
    assert f"--tmpfs {live / '.git'} --remount-ro {live / '.git'}" in joined
    assert f"--ro-bind {root / '.readonly'} {root / '.readonly'}" in joined
    # the read-only staging area is bound after (on top of) the read-write sandboxes root
    assert joined.index(f"--bind {root} {root}") < joined.index(f"--ro-bind {root / '.readonly'}")
    assert "/root" not in argv and str(Path.home()) not in argv
    assert readonly_dir(root / "sandbox-x") == root / ".readonly" / "sandbox-x"


def test_as_root_the_walls_drop_to_the_sandbox_uid_on_the_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user namespace (it would map 65534 to root): bwrap builds the mounts, setpriv drops to the sandbox's
    own host uid (runtime/sandbox_ids.py) with no groups or capabilities just before the program, and every
    folder leading to a mount point is 0755."""
    from codebox_tui.runtime.confinement import PathBind, php_bwrap_argv

    monkeypatch.setattr("codebox_tui.runtime.confinement.drops_to_sandbox_uid", lambda: True)
    root = tmp_path / "sandboxes"
    sidecar = bwrap_argv(
        bwrap="/usr/bin/bwrap",
        node="/usr/bin/node",
        bridge_dir=tmp_path / "bridge",
        playground_home=tmp_path / "pg-home",
        sandboxes_root=root,
        tmp_dir=tmp_path / "t",
        env={},
        binds=(),
        host_uid=2_000_000_007,
    )
    php = php_bwrap_argv(
        bwrap="/usr/bin/bwrap",
        php="/usr/bin/php",
        env={},
        chdir="/wordpress",
        binds=[PathBind(str(tmp_path / "core"), "/wordpress", False)],
        host_uid=2_000_000_007,
    )
    for argv, net in ((sidecar, False), (php, True)):
        joined = " ".join(argv)
        assert "--unshare-all" not in argv and "--uid" not in argv and "--unshare-user" not in argv
        assert ("--unshare-net" in argv) is net and "--unshare-pid" in argv
        assert "--cap-drop ALL --cap-add CAP_SETUID --cap-add CAP_SETGID --cap-add CAP_SETPCAP" in joined
        drop = argv.index("--reuid=2000000007")
        assert argv[drop - 1].endswith("setpriv") and argv[drop + 1 : drop + 6] == [
            "--regid=2000000007",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--",
        ]
        assert argv[drop + 6] in ("/usr/bin/node", "/usr/bin/php") or argv[drop + 6].startswith("/")
        assert "--perms 0755 --dir /etc" in joined
    assert f"--perms 0755 --dir {root.parent} " in " ".join(sidecar)
    with pytest.raises(ValueError, match="host uid"):  # never a shared default uid
        php_bwrap_argv(bwrap="/usr/bin/bwrap", php="/usr/bin/php", env={}, chdir="/", binds=[], host_uid=None)


def test_abandoned_sidecar_files_are_those_of_dead_owners(tmp_path: Path) -> None:
    from codebox_tui.runtime.sandbox_dirs import abandoned_sidecar_files

    dead = subprocess.Popen(["true"])
    dead.wait()
    (tmp_path / f"codebox-sidecar-tmp-{dead.pid}-abc").mkdir()
    (tmp_path / f"codebox-sidecar-{dead.pid}-abc.log").write_text("")
    (tmp_path / f"codebox-sidecar-tmp-{os.getpid()}-mine").mkdir()
    (tmp_path / f"codebox-sidecar-{os.getppid()}-parent.log").write_text("")
    (tmp_path / "codebox-sidecar-tmp-oldstyle").mkdir()
    (tmp_path / "unrelated.log").write_text("")
    assert sorted(p.name for p in abandoned_sidecar_files(tmp_path)) == sorted(
        [f"codebox-sidecar-tmp-{dead.pid}-abc", f"codebox-sidecar-{dead.pid}-abc.log"]
    )
    old = time.time() - 3600
    os.utime(tmp_path / "codebox-sidecar-tmp-oldstyle", (old, old))
    assert "codebox-sidecar-tmp-oldstyle" in {p.name for p in abandoned_sidecar_files(tmp_path)}


@pytest.mark.parametrize("value, expected", [("127.0.0.1", "127.0.0.1"), ("0.0.0.0", "0.0.0.0"), ("[::1]", "::1")])
def test_preview_bind_accepts_ip_addresses(value: str, expected: str) -> None:
    from codebox_tui.lifecycle import preview_bind_address as _preview_bind

    assert _preview_bind(value) == expected
    assert _preview_bind(None) is None


def test_preview_bind_rejects_a_host_name_naming_the_flag() -> None:
    from codebox_tui.errors import BadInputError
    from codebox_tui.lifecycle import preview_bind_address as _preview_bind

    with pytest.raises(BadInputError) as caught:
        _preview_bind("example.com")
    assert caught.value.field == "preview-bind"


def test_only_a_system_folder_at_its_own_path_counts_as_already_in_the_native_system_view(tmp_path: Path) -> None:
    link = tmp_path / "php-link"
    link.symlink_to("/usr/share/php")
    assert in_system_view(Path("/usr/share/php"), "/usr/share/php")
    assert not in_system_view(Path("/usr/share/php"), "/wordpress/wp-content/plugins/php")  # another path
    assert not in_system_view(tmp_path, str(tmp_path))  # a user's folder
    assert not in_system_view(link, str(link))  # a link to a system folder is not the folder
    assert not in_system_view(Path("/usr/share/../../etc"), "/usr/share/../../etc")  # not its own real path
    assert not in_system_view(Path("/etc"), "/etc")  # not among the system folders bound read-only
