"""A network of this process's own with only a loopback interface, for the private local Ray instance
(docs/scale-out.md, "The local instance").

Ray 2.60's GCS, raylet, object manager and worker servers listen on every interface, with no setting to
bind them elsewhere. So before the local instance starts, this process moves into new user and network
namespaces (the user namespace maps the caller's own uid and gid, so files keep their owner) whose only
interface is ``lo``: Ray, its workers and their sandboxes inherit it, everything they listen on is
reachable from this machine's loopback inside that namespace only, and nothing from another host. The
sandboxes never need outside network in a batch; ``--ray-address`` (a real cluster) skips all this.

Linux allows a new user namespace only in a single-threaded process, so this runs before Ray (or anything
else) starts a thread: ``codebox batch`` calls it first thing. It fails closed (:class:`SandboxError`)
rather than start Ray on the machine's interfaces.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct

from codebox_tui.errors import SandboxError

_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1

_entered = False


def enter_private_network() -> None:
    """Move this process (and every process it starts from now on) into a network with only ``lo``, up."""
    global _entered
    if _entered:
        return
    threads = len(os.listdir("/proc/self/task"))
    if threads > 1:
        raise _refused(f"this process already runs {threads} threads (a new user namespace needs one)")
    uid, gid = os.getuid(), os.getgid()
    libc = ctypes.CDLL(None, use_errno=True)
    # As root, every host uid stays mapped: the sandboxes Ray runs drop to their own uid on the host
    # (runtime/confinement.py, drops_to_sandbox_uid), which a one-uid map would not have. Only a process
    # outside the new namespace may write such a map, so a child forked now writes it.
    mapper = _identity_mapper() if uid == 0 else None
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) != 0:
        error = os.strerror(ctypes.get_errno())
        if mapper is not None:
            _finish_mapper(mapper, go=False)
        raise _refused(f"unshare: {error}")
    try:
        if mapper is not None:
            _finish_mapper(mapper, go=True)
        else:
            for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
                with open(f"/proc/self/{name}", "w", encoding="ascii") as handle:
                    handle.write(text)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            request = struct.pack("16sH14s", b"lo", 0, b"")
            flags = struct.unpack("16sH", fcntl.ioctl(probe, _SIOCGIFFLAGS, request)[:18])[1]
            fcntl.ioctl(probe, _SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | _IFF_UP, b""))
    except OSError as error:
        raise _refused(str(error)) from None
    _entered = True


def _identity_mapper() -> tuple[int, int]:
    """Fork the child that will map every uid and gid of this process's new user namespace to itself (as the
    machine's own namespace does); it waits for a byte on a pipe. Returns (pid, the pipe's write end)."""
    parent = os.getpid()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: still in the machine's namespaces, with root's capabilities there
        status = 1
        try:
            os.close(write_end)
            if os.read(read_end, 1) == b"1":
                for name in ("uid_map", "gid_map"):
                    with open(f"/proc/{parent}/{name}", "w", encoding="ascii") as handle:
                        handle.write("0 0 4294967295")
                status = 0
        finally:
            os._exit(status)
    os.close(read_end)
    return pid, write_end


def _finish_mapper(mapper: tuple[int, int], *, go: bool) -> None:
    """Tell the mapping child to write the maps (``go``) or to leave, and wait for it; OSError if it failed."""
    pid, write_end = mapper
    try:
        os.write(write_end, b"1" if go else b"0")
    finally:
        os.close(write_end)
    _, status = os.waitpid(pid, 0)
    if go and os.waitstatus_to_exitcode(status) != 0:
        raise OSError("the identity map of the new user namespace could not be written")


def _refused(why: str) -> SandboxError:
    return SandboxError(
        f"cannot give the private Ray instance a loopback-only network ({why}); nothing was started. "
        "Use --ray-address to run on a Ray cluster instead",
        code="ray-network-unavailable",
    )
