"""A native sandbox's persistent PHP worker for page requests (docs/backends.md, "Page requests and the
preview").

One confined ``php-cgi`` in FastCGI mode per sandbox, inside the same bubblewrap wall as every other native
PHP process, started at the sandbox's first page request and stopped when the sandbox is disposed. The
host makes the listening Unix socket itself, in a folder of the sandbox's work dir that is never bound into
any sandbox process, and hands it to ``php-cgi`` as its standard input (FastCGI's listening descriptor): PHP
never creates, names or sees the socket's path, so nothing the sandbox plants can redirect the host's
connection to another sandbox's worker. The host reaches the folder through a descriptor it holds
(``/proc/self/fd/N/…``), never through a path the sandbox could race.

``php-cgi`` keeps :data:`CHILDREN` request processes, each ending after :data:`MAX_REQUESTS` requests (its
parent starts a new one); PHP resets globals, statics and settings between requests. A request past its
timeout stops the whole worker (every process it started dies with its PID namespace); the next request
starts a new one.
"""

from __future__ import annotations

import math
import os
import select
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from codebox_tui.errors import SandboxError
from codebox_tui.runtime.fastcgi import FastCgiAnswer, FastCgiError, exchange

# Request processes php-cgi keeps, and how many requests each serves before a fresh one replaces it (so the
# CPU-time limit, counted per process, is never reached by many short requests added up).
CHILDREN = 2
MAX_REQUESTS = 100
SOCKET_NAME = "php-fcgi.sock"
LISTEN_BACKLOG = 64
STDERR_KEPT = 16 * 1024


class PhpWorker:
    """One sandbox's worker. ``argv``: the whole confined command line of ``php-cgi`` (built afresh at each
    start), run with the listening socket as its standard input."""

    def __init__(self, socket_dir: Path, argv: Callable[[], list[str]]) -> None:
        socket_dir.mkdir(mode=0o700)
        self._dir_fd = os.open(socket_dir, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW)
        self._argv = argv
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr = bytearray()
        self._keeper: threading.Thread | None = None
        self._closed = False
        self._halted: str | None = None  # why no worker may start any more (the sandbox was aborted)
        self.starts = 0

    @property
    def address(self) -> str:
        return f"/proc/self/fd/{self._dir_fd}/{SOCKET_NAME}"

    @property
    def pid(self) -> int | None:
        """bwrap's process id while the worker runs (tests and diagnostics)."""
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def serve(self, params: dict[str, str], body: bytes, *, timeout_s: float, limit: int) -> FastCgiAnswer:
        """One request to the worker (started first if it is not running). A request past ``timeout_s``
        stops the worker and raises ``sandbox-timeout``; a worker that cannot start, or that ended without an
        answer, raises a SandboxError saying why."""
        process = self._ensure_started()
        try:
            return exchange(self.address, params, body, timeout_s=timeout_s, limit=limit)
        except FastCgiError as error:
            if error.kind == "timeout":
                self.stop(process)
                raise SandboxError(
                    f"Sandbox request timed out after {timeout_s:g} s; its PHP worker was stopped",
                    code="sandbox-timeout",
                    details={"op": "request", "timeoutSeconds": timeout_s},
                ) from None
            keeper = self._keeper
            if error.kind == "protocol" and keeper is not None:
                keeper.join(timeout=1)  # a worker that could not even start closes the connection as it ends
            ended = process.poll() is not None
            if ended:
                self._fail_if_unconfined(process)
            raise SandboxError(
                f"the PHP worker gave no complete answer: {error.message}"
                + (" (the worker had ended)" if ended else ""),
                code="native-worker-failed",
                details={"op": "request"},
            ) from None

    def _ensure_started(self) -> subprocess.Popen[bytes]:
        with self._lock:
            if self._closed:
                raise SandboxError("The sandbox was disposed", code="sandbox-disposed")
            if self._halted is not None:
                raise SandboxError(f"The sandbox {self._halted}", code="sandbox-aborted")
            if self._process is not None and self._process.poll() is None:
                return self._process
            if self._process is not None:
                self._fail_if_unconfined(self._process)
            return self._start()

    def _start(self) -> subprocess.Popen[bytes]:
        try:
            os.unlink(SOCKET_NAME, dir_fd=self._dir_fd)
        except FileNotFoundError:
            pass
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(self.address)
            listener.listen(LISTEN_BACKLOG)
            started: list[subprocess.Popen[bytes] | BaseException] = []
            ready = threading.Event()
            # bwrap dies with the thread that started it (--die-with-parent): a thread that lives exactly as
            # long as the worker starts it and waits for it
            keeper = threading.Thread(
                target=self._keep, args=(listener, started, ready), daemon=True, name="codebox-php-worker"
            )
            keeper.start()
            ready.wait()
            self._keeper = keeper
        finally:
            listener.close()  # the worker holds its own copy; when it ends, connections fail at once
        outcome = started[0]
        if isinstance(outcome, BaseException):
            raise SandboxError(f"could not start the PHP worker: {outcome}", code="native-start-failed") from outcome
        self._process = outcome
        self._stderr = bytearray()
        self.starts += 1
        return outcome

    def _keep(
        self, listener: socket.socket, started: list[subprocess.Popen[bytes] | BaseException], ready: threading.Event
    ) -> None:
        try:
            process = subprocess.Popen(
                self._argv(),
                stdin=listener.fileno(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
            )
        except (OSError, SandboxError) as error:
            started.append(error)
            ready.set()
            return
        started.append(process)
        ready.set()
        assert process.stderr is not None
        while chunk := process.stderr.read1(65536):  # type: ignore[attr-defined]
            room = STDERR_KEPT - len(self._stderr)
            if room > 0:
                self._stderr += chunk[:room]
        process.stderr.close()
        process.wait()

    def _fail_if_unconfined(self, process: subprocess.Popen[bytes]) -> None:
        """bubblewrap could not build the wall (PHP never ran): fail closed, saying why."""
        text = bytes(self._stderr).decode("utf-8", "replace").strip()
        if process.returncode == 1 and text.startswith("bwrap: "):
            raise SandboxError(
                f"the native sandbox could not be confined: {text[:500]}",
                code="confinement-failed",
                details={"op": "request"},
            )

    def stop(self, process: subprocess.Popen[bytes] | None = None) -> None:
        """Kill the worker (``process``: only if it is still the current one): SIGKILL to bwrap's process
        group; the PID namespace takes every process PHP started."""
        with self._lock:
            current = self._process
            if current is None or (process is not None and process is not current):
                return
            self._process = None
        kill_group(current)

    def halt(self, reason: str) -> None:
        """Stop and start no worker any more (the sandbox was aborted): under the lock, a start either came
        first (and is stopped here) or sees ``reason``."""
        with self._lock:
            self._halted = reason
        self.stop()

    def close(self) -> None:
        """Stop for good (the sandbox is disposed)."""
        with self._lock:
            self._closed = True
        self.stop()
        try:
            os.close(self._dir_fd)
        except OSError:
            pass


MAX_POLL_MS = 2**31 - 1  # the longest wait poll takes at once


def wait_for_exit(process: subprocess.Popen[bytes], timeout_s: float) -> int:
    """``process.wait(timeout=timeout_s)`` without its polling: Python waits for a child with a timeout by
    checking and sleeping in turn (up to 50 ms between checks), so a PHP process that ended was noticed up to
    50 ms late, three times in every run (docs/performance.md, "Eighteenth session"). A pidfd becomes readable the
    moment the process ends. :class:`subprocess.TimeoutExpired` when it has not ended by then, as ``wait``."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except OSError:  # already reaped (its exit status is kept by ``process``), or a kernel without pidfds
        return process.wait(timeout=timeout_s)
    deadline = time.monotonic() + timeout_s
    try:
        watch = select.poll()  # poll, not select: a busy process's descriptor numbers can pass select's 1024
        watch.register(pidfd, select.POLLIN)
        while not watch.poll(min(max(0, math.ceil((deadline - time.monotonic()) * 1000)), MAX_POLL_MS)):
            if time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(process.args, timeout_s)
    finally:
        os.close(pidfd)
    return process.wait()


def kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL bwrap's process group: its sandboxed child dies with it (``--die-with-parent``) and the PID
    namespace takes every process PHP started."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
