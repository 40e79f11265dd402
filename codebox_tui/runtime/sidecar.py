"""The Node sidecar process: JSON lines over stdin/stdout, one reader thread, per-request timeouts.

A sidecar that crashes or stops answering is killed (its whole process group) and every pending
request fails with :class:`SandboxError`; nothing is left running. The sidecar also exits on its
own when its stdin closes, so it never outlives the Python process. It runs confined by bubblewrap
(:mod:`codebox_tui.runtime.confinement`) unless the ``confinement`` setting is ``none``. Its private
temp folder and log carry the owner's pid in their names, so a killed owner's leftovers are swept
(runtime/sandbox_dirs.py, :func:`~codebox_tui.runtime.sandbox_dirs.abandoned_sidecar_files`).
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from codebox_tui.errors import SandboxError
from codebox_tui.runtime.confinement import FIX_HINT, Bind, bwrap_argv, drops_to_sandbox_uid, find_bwrap, readonly_area
from codebox_tui.runtime.sandbox_dirs import LOG_PREFIX, TMP_PREFIX
from codebox_tui.runtime.sandbox_ids import SandboxId, allocate, host_uid
from codebox_tui.runtime.sandbox_owner import hand_over_folders
from codebox_tui.settings import NODE_BRIDGE_DIR
from codebox_tui.versions import DEFAULT_PHP_VERSION

ProgressCallback = Callable[[str, dict[str, Any]], None]
# V8 flags per ``wasm_compiler`` setting (placed before the script: they are node's own options).
WASM_COMPILER_FLAGS = {"baseline": ["--liftoff-only"], "tiered": []}
NODE_ARGS = [
    "--import",
    "./netguard.mjs",
    "--import",
    "./nospawn.mjs",
    "--import",
    "./probeguard.mjs",
    "--import",
    "./writeguard.mjs",
    "sidecar.mjs",
    f"--default-php={DEFAULT_PHP_VERSION}",
]


def budgeted_roots(sandboxes_root: Path | None, binds: tuple[Bind, ...]) -> list[str]:
    """The host folders whose growth counts against the write budget (node/writeguard.mjs): every sandbox's
    own folder (site, private copies, opcache) and the ``:live`` folders. Playground's private temp folder
    (``/internal``, where it unpacks its ICU data at each boot) is not among them."""
    roots = [str(sandboxes_root)] if sandboxes_root is not None else []
    roots += [bind.path for bind in binds if bind.writable]
    return sorted({*roots, *(os.path.realpath(root) for root in roots)})


class Sidecar:
    """One running ``node sidecar.mjs`` with a network policy fixed for its lifetime."""

    def __init__(
        self,
        *,
        node: str,
        home: Path,
        network_policy: str,
        start_timeout_s: float = 30.0,
        confinement: str = "bwrap",
        sandboxes_root: Path | None = None,
        binds: tuple[Bind, ...] = (),
        wasm_compiler: str = "baseline",
        write_budget: int = 0,
    ) -> None:
        """Confined as root, it runs as a host uid of its own (``host_id``, runtime/sandbox_ids.py), which every
        sandbox it holds shares (one Node process)."""
        script = NODE_BRIDGE_DIR / "sidecar.mjs"
        if not (NODE_BRIDGE_DIR / "node_modules" / "@wp-playground" / "cli").is_dir():
            raise SandboxError(
                "The Playground bridge is not installed",
                code="sidecar-missing",
                details={"hint": "run `make setup` (npm ci in codebox_tui/runtime/node)"},
            )
        home.mkdir(parents=True, exist_ok=True)
        self.network_policy = network_policy
        self.confined = confinement != "none"
        self.binds = binds
        self.write_budget = write_budget
        bwrap = find_bwrap() if self.confined else ""
        if self.confined and sandboxes_root is None:
            raise ValueError("a confined sidecar needs the sandboxes root")
        node_path = shutil.which(node) or node
        if self.confined and not os.path.isabs(node_path):
            raise SandboxError(f"Node.js not found ({node})", code="node-missing")
        self.host_id: SandboxId | None = None
        if self.confined and drops_to_sandbox_uid():
            self.host_id = allocate()
            home = home / f"uid-{host_uid(self.host_id)}"  # a home of its own: each sidecar's uid owns its own
            home.mkdir(exist_ok=True)
        # Private temp folder and log, named after this (owning) process: swept if it is killed.
        self.tmp_dir = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-"))
        self._log = tempfile.NamedTemporaryFile(prefix=f"{LOG_PREFIX}{os.getpid()}-", suffix=".log", delete=False)
        self.log_path = Path(self._log.name)
        env = {
            "PATH": "/usr/bin:/bin" if self.confined else os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            # Playground's per-site temp dirs go in a private dir we remove even after a SIGKILL
            # (inside the confinement it is the sidecar's /tmp)
            "TMPDIR": "/tmp" if self.confined else str(self.tmp_dir),
            "CODEBOX_NETWORK_POLICY": network_policy,
            # bytes each sandbox's PHP may add to host files, 0 for no limit (node/writeguard.mjs)
            "CODEBOX_WRITE_BUDGET": str(int(write_budget)),
            "CODEBOX_WRITE_BUDGET_ROOTS": json.dumps(budgeted_roots(sandboxes_root, binds)),
            "NODE_NO_WARNINGS": "1",
        }
        node_args = [*WASM_COMPILER_FLAGS[wasm_compiler], *NODE_ARGS]
        argv = [node, *node_args]
        if self.confined:
            assert sandboxes_root is not None
            readonly_area(sandboxes_root).mkdir(parents=True, exist_ok=True)
            # its own writable folders (as root); home may be a link
            hand_over_folders([self.tmp_dir, home.resolve()], host_uid(self.host_id))
            if drops_to_sandbox_uid():
                # its /tmp: bwrap (root without capabilities) makes the mount points of folders that live under
                # /tmp in it (a checkout in /tmp), so it must be able to pass through; nobody else can list it
                self.tmp_dir.chmod(0o711)
            argv = [
                *bwrap_argv(
                    bwrap=bwrap,
                    node=node_path,
                    bridge_dir=NODE_BRIDGE_DIR,
                    playground_home=home,
                    sandboxes_root=sandboxes_root,
                    tmp_dir=self.tmp_dir,
                    env=env,
                    binds=binds,
                    host_uid=host_uid(self.host_id),
                ),
                *node_args,
            ]
        try:
            self._proc = subprocess.Popen(
                argv,
                cwd=script.parent,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log,
                env=env,
                start_new_session=True,
                bufsize=1,
                text=True,
            )
        except FileNotFoundError as error:
            shutil.rmtree(self.tmp_dir, ignore_errors=True)
            if self.host_id is not None:
                self.host_id.release()
            raise SandboxError(f"Node.js not found ({node})", code="node-missing") from error
        self._ids = itertools.count(1)
        self._pending: dict[int, Future[Any]] = {}
        self._lock = threading.Lock()
        self._progress: dict[str, ProgressCallback] = {}
        self._output: dict[int, Callable[[str], None]] = {}  # a request's streamed output (request(on_output=))
        self._hello: Future[Any] = Future()
        self._dead: str | None = None
        self.live_sandboxes = 0  # kept by the backend; an idle sidecar with binds may be closed
        self.last_used = time.monotonic()
        self._reader = threading.Thread(target=self._read, name="codebox-sidecar-reader", daemon=True)
        self._reader.start()
        try:
            self._hello.result(timeout=start_timeout_s)
        except FutureTimeout:
            self.kill("did not start in time")
            raise SandboxError("The Playground sidecar did not start", code="sidecar-start-timeout") from None
        except SandboxError as error:
            if self.confined and "bwrap:" in self.log_tail():
                self.kill("could not be confined")
                raise SandboxError(
                    "bubblewrap could not confine the Playground sidecar: " + self.log_tail(3),
                    code="confinement-unavailable",
                    details={"hint": FIX_HINT, "log": str(self.log_path)},
                ) from error
            raise
        atexit.register(self.close)

    @property
    def pid(self) -> int:
        """The started process (``bwrap`` when confined; see :meth:`node_pid`)."""
        return self._proc.pid

    def node_pid(self) -> int | None:
        """The host pid of the Node process itself (a descendant of ``bwrap`` when confined)."""
        stack = [self._proc.pid]
        while stack:
            pid = stack.pop()
            try:
                if os.path.basename(os.readlink(f"/proc/{pid}/exe")) == "node":
                    return pid
                children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            except OSError:
                continue
            stack.extend(int(child) for child in children)
        return None

    @property
    def alive(self) -> bool:
        return self._dead is None and self._proc.poll() is None

    def on_progress(self, sandbox: str, callback: ProgressCallback | None) -> None:
        if callback is None:
            self._progress.pop(sandbox, None)
        else:
            self._progress[sandbox] = callback

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if "event" in message:
                if message["event"] == "hello" and not self._hello.done():
                    self._hello.set_result(message.get("data"))
                elif message["event"] == "progress":
                    callback = self._progress.get(message.get("sandbox", ""))
                    if callback:
                        data = message.get("data") or {}
                        try:
                            callback(str(data.get("phase", "")), data)
                        except Exception:  # a viewer callback must never kill the reader
                            pass
                elif message["event"] == "output":
                    self._hand_output(message)
                continue
            with self._lock:
                future = self._pending.pop(message.get("id"), None)
            if future is None:
                continue
            if message.get("ok"):
                future.set_result(message.get("result"))
            else:
                error = message.get("error") or {}
                future.set_exception(
                    SandboxError(
                        str(error.get("message", "sidecar error")), code=str(error.get("code", "sidecar-error"))
                    )
                )
        self._mark_dead(f"exited with code {self._proc.wait()}")

    def _hand_output(self, message: dict[str, Any]) -> None:
        """A piece of a running request's output to its ``on_output`` (the sandbox's text: a display hint)."""
        request_id, text = message.get("id"), message.get("text")
        callback = self._output.get(request_id) if isinstance(request_id, int) else None
        if callback is None or not isinstance(text, str):
            return
        try:
            callback(text)
        except Exception:  # a viewer callback must never kill the reader
            self._output.pop(request_id, None)  # type: ignore[arg-type]

    def _mark_dead(self, reason: str) -> None:
        if self._dead is None:
            self._dead = reason
        if not self._hello.done():
            self._hello.set_exception(
                SandboxError(
                    f"The Playground sidecar {reason}", code="sidecar-crashed", details={"log": str(self.log_path)}
                )
            )
        with self._lock:
            pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(
                    SandboxError(
                        f"The Playground sidecar {reason}",
                        code="sidecar-crashed",
                        details={"log": str(self.log_path), "tail": self.log_tail()},
                    )
                )

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def request(
        self, op: str, params: dict[str, Any], timeout_s: float, on_output: Callable[[str], None] | None = None
    ) -> Any:
        """One request and its result. ``on_output``: called on the reader thread with each piece of output the
        operation streams while it runs (``cli`` with ``streamStderr``)."""
        if not self.alive:
            raise SandboxError(f"The Playground sidecar {self._dead or 'is not running'}", code="sidecar-crashed")
        request_id = next(self._ids)
        future: Future[Any] = Future()
        with self._lock:
            self._pending[request_id] = future
        if on_output is not None:
            self._output[request_id] = on_output
            future.add_done_callback(lambda _done: self._output.pop(request_id, None))
        line = json.dumps({"id": request_id, "op": op, "params": params}) + "\n"
        try:
            assert self._proc.stdin is not None
            self._proc.stdin.write(line)
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError) as error:
            self.kill("stopped accepting requests")
            raise SandboxError("The Playground sidecar stopped accepting requests", code="sidecar-crashed") from error
        try:
            return future.result(timeout=timeout_s)
        except FutureTimeout:
            self.kill(f"did not answer {op!r} within {timeout_s:g} s and was killed")
            raise SandboxError(
                f"Sandbox {op} timed out after {timeout_s:g} s; the sidecar was killed",
                code="sandbox-timeout",
                details={"op": op, "timeoutSeconds": timeout_s},
            ) from None

    def kill(self, reason: str = "was killed") -> None:
        """SIGKILL the sidecar and return once nothing of its process group is left. Under bubblewrap the
        group is bwrap (the leader), bwrap's namespace init and Node: the members below the leader are
        killed first so that each is reaped by its own parent (an orphan would wait for pid 1, which does
        not reap on every machine), then the leader, which exits with them, is reaped here."""
        leader = self._proc.pid
        members = _live_group_members(leader) - {leader}
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if members and self._proc.poll() is None:
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(leader, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self._proc.poll() is None:
            self._proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _live_group_members(leader) and time.monotonic() < deadline:
            time.sleep(0.02)
        shutil.rmtree(self.tmp_dir, ignore_errors=True)
        if self.host_id is not None:  # nothing of it runs any more
            self.host_id.release()
        self._mark_dead(reason)

    def close(self, timeout_s: float = 10.0) -> None:
        """Ask the sidecar to dispose everything and exit; kill it if it does not."""
        if self._proc.poll() is None and self._dead is None:
            try:
                self.request("shutdown", {}, timeout_s)
            except SandboxError:
                pass
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.close()
            except OSError:
                pass
            try:
                self._proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                pass
        self.kill("was closed")
        self._log.close()
        try:
            self.log_path.unlink()
        except OSError:
            pass
        atexit.unregister(self.close)


def _live_group_members(pgid: int) -> set[int]:
    """Processes of process group ``pgid`` that are not zombies (read from /proc)."""
    found: set[int] = set()
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # after "pid (comm)": state, ppid, pgrp, ...
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            found.add(int(name))
    return found
