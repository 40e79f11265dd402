"""Issue 12: nothing Codebox runs on the host trusts sandbox-written data.

Each test performs the attack for real (PHP inside a real Playground sandbox plants links, a git
repository or an apply journal; real git; the real store and the real ``codebox`` CLI) and asserts
the host is untouched (docs/security-host.md)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.runtime.mounts import remove_tree


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
        "/wordpress/wp-content/evil-private": private,       # the sandbox's site copy
        "/wordpress/wp-content/uploads/evil-sticky": sticky,
        "/wordpress/evil-deep/a/b/c/evil-sticky": sticky,
        "/internal/shared/opcache/evil-private": private,    # the sandbox's opcache copy
        "/wordpress/wp-content/plugins/p/evil-private": private,  # a read-write mount
    }
    code = "$r = [];" + "".join(
        f"@mkdir(dirname({_php_string(link)}), 0777, true);"
        f"$r[{_php_string(link)}] = symlink({_php_string(str(target))}, {_php_string(link)});"
        for link, target in links.items()
    ) + "@mkdir('/wordpress/locked/inner', 0777, true); chmod('/wordpress/locked/inner', 0); chmod('/wordpress/locked', 0555);" \
        + "echo json_encode($r);"
    run = make_run_session(mounts=[f"{plugin}:/wordpress/wp-content/plugins/p:readwrite"])
    try:
        result = run.execute("wordpress.run-php", [f"code={code}"])
        assert result.exitCode == 0, result.stdout + result.stderr
        planted = json.loads(result.stdout)
        assert planted["/wordpress/wp-content/evil-private"] is True, planted
        assert planted["/wordpress/wp-content/plugins/p/evil-private"] is True, planted
        assert os.path.islink(plugin / "evil-private")  # it really is a host symlink
        sandbox = run.sandbox
        work_dir = Path(sandbox.work_dir)
        assert os.path.islink(work_dir / "wordpress" / "wp-content" / "evil-private")
    finally:
        run.close()
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
