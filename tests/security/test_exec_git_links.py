"""`codebox exec` hides `.git` by where a path leads, not only by how it is spelt (docs/exec.md, "File
system"). The attack: PHP inside a real sandbox makes links to a mount's `.git` folder (relative,
absolute, chained, through `..`, dangling), then exec commands read and write through them.

It stays on Playground although the check is the shared shell's (node/sandboxfs.mjs, on both backends): the links
are made in php-wasm's own file system (`/tmp` there is its memory file system), and forty commands cost a few
hundredths of a CPU-second each in a warm sidecar against about a second each natively (docs/exec.md)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.contracts.exec import ExecRequest, ExecResult
from codebox_tui.runtime.exec import run_exec
from tests.factories.paths import EXAMPLE_PLUGIN

pytestmark = pytest.mark.playground

PLUGIN = "/wordpress/wp-content/plugins/simple-plugin"
GIT_MARKER = "codebox-git-through-link-5c2d"
# name -> link target, made by PHP inside the sandbox (the mount is read-write, so these are real links)
LINKS = {
    f"{PLUGIN}/rel": ".git",
    f"{PLUGIN}/abs": f"{PLUGIN}/.git",
    f"{PLUGIN}/sub/up": "../.git",
    f"{PLUGIN}/sub/dotdot": "../sub/../../simple-plugin/.git",
    f"{PLUGIN}/chain1": "chain2",
    f"{PLUGIN}/chain2": "sub/up",
    "/tmp/memfs-link": f"{PLUGIN}/.git",
    f"{PLUGIN}/config-link": ".git/config",
    f"{PLUGIN}/dangling": ".git/planted",
}


@pytest.fixture(scope="module")
def box(playground_session: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("exec-git-links")
    plugin = root / "simple-plugin"
    shutil.copytree(EXAMPLE_PLUGIN, plugin)
    (plugin / "sub").mkdir()
    (plugin / "sub" / "visible.txt").write_text("ok")
    run = playground_session.new_run(root / "artifacts", mounts=[f"{plugin}:{PLUGIN}"])
    with run:
        run.boot_sandbox()
        # the .git folder is made inside the sandbox too (a host folder's .git is not mounted)
        php(run, f"@mkdir('{PLUGIN}/.git'); file_put_contents('{PLUGIN}/.git/config', '{GIT_MARKER}');")
        made = php(
            run,
            "".join(f"@symlink('{target}', '{link}');" for link, target in LINKS.items())
            + "echo json_encode(array_map('is_link', "
            + repr(list(LINKS)).replace("'", '"')
            + "));",
        )
        assert made == "[" + ",".join(["true"] * len(LINKS)) + "]"
        assert php(run, f"echo file_get_contents('{PLUGIN}/rel/config');") == GIT_MARKER  # PHP follows them
        yield run


def ex(run: Any, command: str, caps: tuple[str, ...] = ("read",), cwd: str = "/wordpress") -> ExecResult:
    return run_exec(run, ExecRequest(command=command, cwd=cwd, capabilities=list(caps)))  # type: ignore[arg-type]


def php(run: Any, code: str) -> str:
    return str(run.sandbox.run_php("<?php " + code, 60).text)


@pytest.mark.parametrize(
    "command",
    [
        f"cat {PLUGIN}/rel/config",
        f"cat {PLUGIN}/abs/config",
        f"cat {PLUGIN}/sub/up/config",
        f"cat {PLUGIN}/sub/dotdot/config",
        f"cat {PLUGIN}/chain1/config",
        "cat /tmp/memfs-link/config",
        f"cat {PLUGIN}/config-link",
        f"cat {PLUGIN}/sub/../rel/config",
        f"head -c 100 {PLUGIN}/chain1/config",
        f"ls -a {PLUGIN}/rel",
        f"ls -a {PLUGIN}/chain1",
        f"ls -la {PLUGIN}",
        f"ls -la {PLUGIN}/sub",
        f"find {PLUGIN}/rel",
        f"find {PLUGIN}/chain1/",
        f"grep -r {GIT_MARKER} {PLUGIN}/rel",
        f"grep -r {GIT_MARKER} {PLUGIN}",
        f"grep {GIT_MARKER} {PLUGIN}/config-link",
        f"on rg {GIT_MARKER} --path {PLUGIN}/rel --hidden",
        f"on rg {GIT_MARKER} --path {PLUGIN}/config-link",
        f"on rg {GIT_MARKER} --all --hidden",
        f"cd {PLUGIN}/rel && cat config",
        f"cd {PLUGIN}/chain1 && ls -a",
        f"readlink {PLUGIN}/rel",
        f"realpath {PLUGIN}/chain1",
        f"wc -c {PLUGIN}/abs/config",
        f"cp {PLUGIN}/rel/config /tmp/copied && cat /tmp/copied",
    ],
)
def test_reads_through_a_link_to_dot_git_see_nothing(box: Any, command: str) -> None:
    result = ex(box, command, caps=("read", "write"))
    assert GIT_MARKER not in result.stdout + result.stderr, command
    for link in LINKS:
        assert f"{Path(link).name} ->" not in result.stdout, command  # the links themselves are not listed


@pytest.mark.parametrize(
    "command",
    [
        f"echo planted > {PLUGIN}/dangling",
        f"echo planted > {PLUGIN}/rel/planted",
        f"echo planted >> {PLUGIN}/config-link",
        f"touch {PLUGIN}/chain1/planted",
        f"mkdir {PLUGIN}/abs/planted",
        f"rm {PLUGIN}/sub/up/config",
        f"cp {PLUGIN}/sub/visible.txt {PLUGIN}/sub/dotdot/planted",
        f"mv {PLUGIN}/sub/visible.txt {PLUGIN}/rel/planted",
    ],
)
def test_writes_through_a_link_to_dot_git_change_nothing(box: Any, command: str) -> None:
    result = ex(box, command, caps=("read", "write"))
    assert result.exitCode != 0, command
    git = f"{PLUGIN}/.git"
    assert php(box, f"echo implode(',', array_diff(scandir('{git}'), ['.', '..']));") == "config", command
    assert php(box, f"echo file_get_contents('{git}/config');") == GIT_MARKER, command
    assert php(box, f"echo file_get_contents('{PLUGIN}/sub/visible.txt');") == "ok", command


def test_cwd_through_a_link_to_dot_git_is_refused(box: Any) -> None:
    for cwd in (f"{PLUGIN}/rel", f"{PLUGIN}/chain1", "/tmp/memfs-link"):
        result = ex(box, "cat config", cwd=cwd)
        assert result.error is not None and result.error.code == "invalid-cwd", cwd
        assert GIT_MARKER not in result.stdout


def test_ordinary_files_and_links_still_work(box: Any) -> None:
    php(box, f"@symlink('sub', '{PLUGIN}/plain-link');")
    assert ex(box, f"cat {PLUGIN}/plain-link/visible.txt").stdout == "ok"
    assert "visible.txt" in ex(box, f"ls {PLUGIN}/plain-link").stdout
    assert ex(box, f"echo more > {PLUGIN}/plain-link/new.txt", caps=("read", "write")).exitCode == 0
    assert php(box, f"echo file_get_contents('{PLUGIN}/sub/new.txt');") == "more\n"
