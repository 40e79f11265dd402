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
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) != 0:
        raise _refused(f"unshare: {os.strerror(ctypes.get_errno())}")
    try:
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


def _refused(why: str) -> SandboxError:
    return SandboxError(
        f"cannot give the private Ray instance a loopback-only network ({why}); nothing was started. "
        "Use --ray-address to run on a Ray cluster instead",
        code="ray-network-unavailable",
    )
