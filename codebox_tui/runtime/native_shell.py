"""``codebox exec`` on the native backend (docs/exec.md, "On the native backend").

The shell is the Playground shell's own code (``node/exec.mjs`` over ``node/sandboxfs.mjs``: classification,
capabilities, limits, ``wp``, ``on``, the eval policy), run by ``node/native-shell.mjs`` in a Node process
inside the sandbox's bubblewrap wall: the same binds as every native PHP process (only the sandbox's
``wp-content``, ``tmp`` and read-write mounts writable), an empty network namespace, uid 65534, no
capabilities, ``prlimit``. The Node bridge's code is bound read-only at :data:`SHELL_DIR`; nothing else of the
host is added. PHP (``wp``, ``wp eval``, the file helper) is the host's binary started by that Node process
inside the same wall, with the PHP settings this module passes (the host's, :meth:`NativeSandbox.php_ini_args`).

What comes back is sandbox-written data: a PHP child in the wall can write to its parent's output. So the
answer is size-capped, parsed as untrusted JSON, and the classification and reason recorded for the command
are the host's own (the classifier run on the host before anything ran), never the answer's.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from typing import Any, Protocol

from codebox_tui.errors import SandboxError
from codebox_tui.runtime.confinement import PathBind, php_bwrap_argv
from codebox_tui.runtime.native_site import CORE, host_php
from codebox_tui.settings import NODE_BRIDGE_DIR, get_settings

# Where the Node bridge's code is shown inside the wall (read-only), and its installed packages.
SHELL_DIR = "/codebox-shell"
SHELL_SCRIPT = "native-shell.mjs"
# Room for the JSON answer around the command's own output (escaping can grow text up to six times).
ANSWER_OVERHEAD_BYTES = 1024 * 1024
Runner = Callable[[list[str], bytes, int], tuple[int, bytes, bytes]]


class NativeSandboxWall(Protocol):
    """What the shell needs of a native sandbox (runtime/native.py's NativeSandbox)."""

    @property
    def bwrap(self) -> str: ...

    @property
    def binds(self) -> list[PathBind]: ...

    @property
    def basedir(self) -> str: ...

    @property
    def base_env(self) -> dict[str, str]: ...

    @property
    def host_uid(self) -> int | None: ...

    def process_limits(self, timeout_s: float) -> list[str]: ...

    def php_ini_args(self, *, opcache: bool, cgi: bool = False, basedir: str | None = None) -> list[str]: ...


def shell_binds() -> list[PathBind]:
    """The Node bridge, read-only at ``/codebox-shell/bridge``; its ``node_modules`` at ``/codebox-shell/
    node_modules`` when it is a link to another checkout's (Node looks there next)."""
    bridge = NODE_BRIDGE_DIR.resolve()
    binds = [PathBind(str(bridge), f"{SHELL_DIR}/bridge", False)]
    modules = NODE_BRIDGE_DIR / "node_modules"
    if modules.is_symlink():
        binds.append(PathBind(str(modules.resolve()), f"{SHELL_DIR}/node_modules", False))
    return binds


def shell_argv(sandbox: NativeSandboxWall, timeout_s: float) -> list[str]:
    """``prlimit … bwrap … node native-shell.mjs``: the sandbox's wall around the Node shell."""
    node = _node_binary()
    bwrap = php_bwrap_argv(
        bwrap=sandbox.bwrap,
        php=node,
        binds=[*sandbox.binds, *shell_binds()],
        env=dict(sandbox.base_env),
        chdir=CORE,
        host_uid=sandbox.host_uid,
    )
    return [*sandbox.process_limits(timeout_s), *bwrap, f"{SHELL_DIR}/bridge/{SHELL_SCRIPT}"]


def _node_binary() -> str:
    found = shutil.which(get_settings().node)
    if not found:
        raise SandboxError("Node is not installed; the native sandbox shell needs it", code="exec-unavailable")
    return os.path.realpath(found)


def folders_above(roots: list[str]) -> list[str]:
    """The folders that lead to a root and are no root themselves (``/workspace`` above a mount at
    ``/workspace/plugin``): the shell lists them (Codebox's file helper may open them), nothing more."""
    above: set[str] = set()
    for root in roots:
        parts = [part for part in root.split("/") if part]
        for depth in range(1, len(parts)):
            folder = "/" + "/".join(parts[:depth])
            if not any(folder == r or folder.startswith(r.rstrip("/") + "/") for r in roots):
                above.add(folder)
    return sorted(above)


def run_shell(sandbox: NativeSandboxWall, params: dict[str, Any], timeout_s: float, run: Runner) -> dict[str, Any]:
    """Run one exec request (:func:`codebox_tui.runtime.exec.run_exec`'s ``params``) in ``sandbox``'s wall and
    return the shell's answer, checked to be a JSON object of bounded size."""
    roots = [root for root in sandbox.basedir.split(":") if root]
    php = {
        "binary": os.path.realpath(host_php().binary),
        "cwd": CORE,
        "env": dict(sandbox.base_env),
        "runArgs": sandbox.php_ini_args(opcache=True),
        "probeArgs": sandbox.php_ini_args(opcache=False, basedir=":".join([*roots, *folders_above(roots)])),
        "roots": roots,
        "above": folders_above(roots),
    }
    limits = params.get("limits") or {}
    limit = 8 * int(limits.get("maxOutputBytes") or 1) + ANSWER_OVERHEAD_BYTES
    code, out, err = run(shell_argv(sandbox, timeout_s), json.dumps({**params, "php": php}).encode(), limit)
    try:
        answer = json.loads(out)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        reason = err.decode("utf-8", "replace").strip()[-500:] or f"exit {code}, no answer"
        raise SandboxError(f"the native sandbox shell failed: {reason}", code="exec-failed", details={"exitCode": code})
    return answer
