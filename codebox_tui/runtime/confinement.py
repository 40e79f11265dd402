"""OS-level confinement of the Node sidecar with bubblewrap (docs/security.md, "Layers").

The sidecar runs in its own user, mount, PID, IPC, UTS and cgroup namespaces (the network is shared so
the preview stays reachable on loopback; ``netguard.mjs`` applies the network policy), as uid/gid
65534 without capabilities, with a cleared environment, its own ``/proc``, a minimal ``/dev`` and a
private ``/tmp``. It sees only:

* system files, read-only (``/usr`` and the ``/etc`` pieces Node needs);
* the Node bridge folder, read-only;
* the Playground ``HOME`` and the sandboxes root (site copies, private copies), read-write;
* the read-only staging area inside the sandboxes root, bound read-only: a staged copy of a read-only
  mount cannot be made writable with ``chmod`` from inside (the mount itself is read-only);
* the external host folders a boot asked for (``hostPath`` values outside the sandboxes root), each
  bound read-only or read-write. Binds are fixed when bwrap starts, so sidecars are keyed by them.

Nothing else of the host (the project checkout, the store, the rest of ``CODEBOX_HOME``, ``/root``,
other users' files, the caller's environment) exists inside. ``CODEBOX_CONFINEMENT=none`` turns this
off (dangerous; documented in docs/security.md).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from codebox_tui.errors import SandboxError

# The sandbox's uid/gid inside its user namespace (not root: mapped to the caller). As root there is no user
# namespace and each sandbox runs as an id of its own on the host (runtime/sandbox_ids.py).
SANDBOX_UID = 65534
# Namespaces both walls get when they drop to the sandbox's host uid (no user namespace: see
# sandbox_identity). bwrap keeps only the capabilities setpriv needs to change to that uid, and setpriv
# clears them all (effective, permitted, inheritable, bounding) before the sandboxed program starts.
DROP_NAMESPACES = ("--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try")
DROP_KEEPS = ("--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP")
# Inside the sandboxes root: where read-only mounts are staged; bound read-only into the sidecar.
READONLY_AREA = ".readonly"
# /etc entries Node and the resolver read (only those that exist are bound, read-only).
ETC_ENTRIES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "ssl",
    "ca-certificates",
    "resolv.conf",
    "hosts",
    "nsswitch.conf",
    "gai.conf",
    "host.conf",
    "localtime",
    "timezone",
    "alternatives",
)
SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin")
FIX_HINT = (
    "install bubblewrap (`scripts/install-system.sh` or `apt-get install bubblewrap`), or set "
    "CODEBOX_CONFINEMENT=none to run the sidecar unconfined (dangerous: see docs/security.md)"
)


@dataclass(frozen=True, order=True)
class Bind:
    """A host folder made visible to the sidecar at the same path."""

    path: str
    writable: bool

    @property
    def label(self) -> str:
        return f"{self.path}:{'rw' if self.writable else 'ro'}"


def readonly_area(sandboxes_root: Path) -> Path:
    return sandboxes_root / READONLY_AREA


def readonly_dir(work_dir: Path) -> Path:
    """Where a sandbox's read-only mounts are staged (bound read-only into the confined sidecar)."""
    return readonly_area(work_dir.parent) / work_dir.name


def find_bwrap() -> str:
    found = shutil.which("bwrap")
    if not found:
        raise SandboxError(
            "bubblewrap (bwrap) is not installed; the sandbox cannot be confined",
            code="confinement-unavailable",
            details={"hint": FIX_HINT},
        )
    return found


def drops_to_sandbox_uid() -> bool:
    """Whether the sandbox runs as an unprivileged uid of its own on the *host*, not only inside its namespace.

    As a normal user, bwrap's user namespace maps the sandbox's uid 65534 to the caller's own uid: the
    sandbox can do no more than the caller. As root that mapping would make every sandboxed process root
    on the host side of its mounts (able to write any root-owned file it sees, leaving root-owned files
    in the user's folders). So as root the wall gets no user namespace: bwrap (still root) builds the
    mounts, then ``setpriv`` switches to the sandbox's own uid/gid (runtime/sandbox_ids.py) with no groups
    and no capabilities, and the folders the sandbox must write are handed to that uid first
    (runtime/sandbox_owner.py)."""
    return os.geteuid() == 0


def find_setpriv() -> str:
    found = shutil.which("setpriv")
    if not found:
        raise SandboxError(
            "setpriv (util-linux) is not installed; a sandbox started as root cannot drop to an unprivileged uid",
            code="confinement-unavailable",
            details={"hint": FIX_HINT},
        )
    return found


def sandbox_identity(bwrap: str, *, share_net: bool, host_uid: int | None) -> tuple[list[str], list[str]]:
    """The start of the bwrap command line (namespaces, uid, capabilities) and what goes before the
    sandboxed program (``setpriv …`` to ``host_uid``, the sandbox's own id from runtime/sandbox_ids.py, when
    dropping to a host uid; nothing otherwise)."""
    if not drops_to_sandbox_uid():
        head = [
            bwrap,
            "--unshare-all",
            *(["--share-net"] if share_net else []),
            "--clearenv",
            "--uid",
            str(SANDBOX_UID),
            "--gid",
            str(SANDBOX_UID),
            "--cap-drop",
            "ALL",
        ]
        return head, []
    if host_uid is None:
        raise ValueError("a sandbox started as root needs a host uid of its own (runtime/sandbox_ids.py)")
    head = [bwrap, *DROP_NAMESPACES, *([] if share_net else ["--unshare-net"]), "--clearenv", *DROP_KEEPS]
    drop = [
        find_setpriv(),
        f"--reuid={host_uid}",
        f"--regid={host_uid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
    ]
    return head, drop


# bwrap options that take a destination inside the sandbox as their last argument, with their arity.
DEST_OPTIONS = {
    "--bind": 2,
    "--ro-bind": 2,
    "--bind-try": 2,
    "--ro-bind-try": 2,
    "--dev-bind": 2,
    "--symlink": 2,
    "--proc": 1,
    "--dev": 1,
    "--tmpfs": 1,
}
OPTION_ARITY = {
    "--setenv": 2,
    "--uid": 1,
    "--gid": 1,
    "--cap-add": 1,
    "--cap-drop": 1,
    "--perms": 1,
    "--dir": 1,
    "--remount-ro": 1,
    "--chdir": 1,
    **DEST_OPTIONS,
}


def with_open_parents(options: list[str]) -> list[str]:
    """``options`` with every missing parent folder of a destination made ``0755`` first. Without a user
    namespace bwrap makes the folders leading to a mount point ``0700`` root's, which the sandbox uid could
    not traverse (``/etc`` of ``/etc/php``, the folders above ``CODEBOX_HOME``). A ``--dir`` on a folder that
    exists changes nothing."""
    out: list[str] = []
    index = 0
    while index < len(options):
        option = options[index]
        arity = OPTION_ARITY.get(option, 0)
        if option in DEST_OPTIONS:
            dest = Path(options[index + arity])
            for parent in reversed(dest.parents[:-1]):  # shallowest first, "/" left out
                out += ["--perms", "0755", "--dir", str(parent)]
        out += options[index : index + arity + 1]
        index += arity + 1
    return out


def _system_view(env: dict[str, str], etc_entries: tuple[str, ...] | list[str], interpreter: str) -> list[str]:
    """The bwrap arguments both confined processes share: the environment given (after ``--clearenv``), the
    system folders read-only (their symlinks as symlinks), the ``/etc`` entries named, and the interpreter's
    prefix read-only when it is installed outside ``/usr``."""
    argv: list[str] = []
    for name, value in env.items():
        argv += ["--setenv", name, value]
    bound = _bound_system_dirs()
    for system_dir in SYSTEM_DIRS:
        if os.path.islink(system_dir):
            argv += ["--symlink", os.readlink(system_dir), system_dir]
        elif system_dir in bound:
            argv += ["--ro-bind", system_dir, system_dir]
    for entry in etc_entries:
        argv += ["--ro-bind-try", f"/etc/{entry}", f"/etc/{entry}"]
    path = Path(os.path.realpath(interpreter))
    if not _is_within(path, Path("/usr")):  # installed elsewhere: its prefix, read-only
        prefix = path.parent.parent if path.parent.name == "bin" else path.parent
        argv += ["--ro-bind", str(prefix), str(prefix)]
    return argv


def _bound_system_dirs() -> list[str]:
    """The :data:`SYSTEM_DIRS` a confined process sees bound read-only as folders (a link among them is made a
    link inside instead)."""
    return [d for d in SYSTEM_DIRS if not os.path.islink(d) and os.path.isdir(d)]


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def in_system_view(source: Path, target: str) -> bool:
    """Whether a native PHP process already sees the host folder ``source`` at ``target``, read-only, in its
    system view (:func:`_system_view`): ``target`` is ``source`` itself, no part of it is a link, and it lies in
    one of :data:`SYSTEM_DIRS` that is bound as a folder (not a link). Debian's PHPUnit sources
    (``/usr/share/php``) are; a user's folder never is."""
    path = Path(target)
    if not path.is_absolute() or Path(os.path.realpath(source)) != path or Path(source) != path:
        return False
    return any(_is_within(path, Path(d)) for d in _bound_system_dirs())


def bwrap_argv(
    *,
    bwrap: str,
    node: str,
    bridge_dir: Path,
    playground_home: Path,
    sandboxes_root: Path,
    tmp_dir: Path,
    env: dict[str, str],
    binds: tuple[Bind, ...],
    host_uid: int | None,
) -> list[str]:
    """The ``bwrap … node`` command line (the sidecar arguments are appended by the caller).

    No ``--die-with-parent``: its parent-death signal follows the *thread* that started bwrap, and sidecars
    are started from short-lived worker threads (a background seed boot lost its sidecar to SIGKILL when
    the starter thread ended). The sidecar already exits when its stdin closes, which happens when the
    owning process dies, however it dies (runtime/sidecar.py)."""
    argv, drop = sandbox_identity(bwrap, share_net=True, host_uid=host_uid)
    argv += _system_view(env, ETC_ENTRIES, node)
    argv += ["--proc", "/proc", "--dev", "/dev", "--bind", str(tmp_dir), "/tmp"]
    # External folders first, Codebox's own on top (a folder that contains CODEBOX_HOME stays
    # read-only where Codebox says so).
    for bind in binds:
        argv += ["--bind" if bind.writable else "--ro-bind", bind.path, bind.path]
        dot_git = Path(bind.path) / ".git"
        if bind.writable and dot_git.is_dir() and not dot_git.is_symlink():
            # a live mount's repository is not the sidecar's business: an empty read-only folder
            argv += ["--tmpfs", str(dot_git), "--remount-ro", str(dot_git)]
    argv += [
        "--bind",
        str(playground_home),
        str(playground_home),
        "--bind",
        str(sandboxes_root),
        str(sandboxes_root),
        "--ro-bind",
        str(readonly_area(sandboxes_root)),
        str(readonly_area(sandboxes_root)),
    ]
    bridge = bridge_dir.resolve()
    argv += ["--ro-bind", str(bridge), str(bridge)]
    modules = bridge_dir / "node_modules"
    if modules.is_symlink():  # a development checkout sharing another checkout's node_modules
        real = modules.resolve()
        argv += ["--ro-bind", str(real), str(real)]
    if drop:
        argv = with_open_parents(argv)
    argv += ["--chdir", str(bridge), *drop, Path(os.path.realpath(node)).as_posix()]
    return argv


def external_binds(host_paths: list[tuple[str, bool]], sandboxes_root: Path) -> tuple[Bind, ...]:
    """The sorted, de-duplicated binds for host folders outside the sandboxes root (a folder both
    read-only and read-write is bound read-write)."""
    root = Path(os.path.realpath(sandboxes_root))
    chosen: dict[str, bool] = {}
    for host_path, writable in host_paths:
        real = Path(os.path.realpath(host_path))
        if _is_within(real, root):
            continue
        chosen[str(real)] = chosen.get(str(real), False) or writable
    return tuple(sorted(Bind(path, writable) for path, writable in chosen.items()))


def covered(host_path: str, sandboxes_root: Path, binds: tuple[Bind, ...], *, writable: bool) -> bool:
    """Whether the confined sidecar sees ``host_path`` (with write access when ``writable``)."""
    real = Path(os.path.realpath(host_path))
    if _is_within(real, Path(os.path.realpath(sandboxes_root))):
        return True
    return any(_is_within(real, Path(b.path)) and (b.writable or not writable) for b in binds)


# -- the native backend's wall: every PHP process in its own bubblewrap (docs/backends.md) ---------------
# /etc entries PHP reads: its own configuration (read-only, so a sandbox cannot plant php.ini or a
# conf.d file), the dynamic loader's cache, the alternatives links behind /usr/bin/php, time zones.
PHP_ETC_ENTRIES = (
    "php",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "localtime",
    "timezone",
    "ssl",
    "ca-certificates",
)


@dataclass(frozen=True)
class PathBind:
    """A host path shown to a confined PHP process at ``target`` (which may differ from the host path)."""

    source: str
    target: str
    writable: bool


def php_bwrap_argv(
    *, bwrap: str, php: str, binds: list[PathBind], env: dict[str, str], chdir: str, host_uid: int | None
) -> list[str]:
    """The ``bwrap … php`` command line for one native PHP process (the PHP arguments are appended by the
    caller). Unlike the sidecar's wall the network namespace is *not* shared: the process gets an empty
    one (only its own loopback), so ``network: deny`` holds for PHP and every child it starts. All other
    namespaces are new too, the process runs as uid/gid 65534 (as root: ``host_uid`` on the host) without
    capabilities, in its own session (no terminal to inject into), with a cleared environment, its own
    ``/proc``, a minimal ``/dev``, the system read-only, and nothing else of the host but ``binds`` (in order:
    later binds cover earlier ones, so a read-only file inside a writable folder stays read-only).
    ``--die-with-parent``: the calling thread waits for the process, so the whole sandbox dies with it or with a
    kill of bwrap."""
    head, drop = sandbox_identity(bwrap, share_net=False, host_uid=host_uid)
    argv = [*head, "--die-with-parent", "--new-session"]
    argv += _system_view(env, PHP_ETC_ENTRIES, php)
    argv += ["--proc", "/proc", "--dev", "/dev"]
    for bind in binds:
        argv += ["--bind" if bind.writable else "--ro-bind", bind.source, bind.target]
    if drop:
        argv = with_open_parents(argv)
    argv += ["--chdir", chdir, *drop, Path(os.path.realpath(php)).as_posix()]
    return argv
