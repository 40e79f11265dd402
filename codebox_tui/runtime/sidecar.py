"""The Node sidecar process: JSON lines over stdin/stdout, one reader thread, per-request timeouts.

A sidecar that crashes or stops answering is killed (its whole process group) and every pending
request fails with :class:`SandboxError`; nothing is left running. The sidecar also exits on its
own when its stdin closes, so it never outlives the Python process.
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
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from codebox_tui.errors import SandboxError
from codebox_tui.settings import NODE_BRIDGE_DIR

ProgressCallback = Callable[[str, dict[str, Any]], None]


class Sidecar:
    """One running ``node sidecar.mjs`` with a network policy fixed for its lifetime."""

    def __init__(self, *, node: str, home: Path, network_policy: str, start_timeout_s: float = 30.0) -> None:
        script = NODE_BRIDGE_DIR / "sidecar.mjs"
        if not (NODE_BRIDGE_DIR / "node_modules" / "@wp-playground" / "cli").is_dir():
            raise SandboxError(
                "The Playground bridge is not installed", code="sidecar-missing",
                details={"hint": "run `make setup` (npm ci in codebox_tui/runtime/node)"},
            )
        home.mkdir(parents=True, exist_ok=True)
        self.network_policy = network_policy
        self.tmp_dir = Path(tempfile.mkdtemp(prefix="codebox-sidecar-tmp-"))
        self._log = tempfile.NamedTemporaryFile(prefix="codebox-sidecar-", suffix=".log", delete=False)
        self.log_path = Path(self._log.name)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            # Playground's per-site temp dirs go in a private dir we remove even after a SIGKILL
            "TMPDIR": str(self.tmp_dir),
            "CODEBOX_NETWORK_POLICY": network_policy,
            "NODE_NO_WARNINGS": "1",
        }
        try:
            self._proc = subprocess.Popen(
                [node, "--import", "./netguard.mjs", "sidecar.mjs"],
                cwd=script.parent, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                env=env, start_new_session=True, bufsize=1, text=True,
            )
        except FileNotFoundError as error:
            shutil.rmtree(self.tmp_dir, ignore_errors=True)
            raise SandboxError(f"Node.js not found ({node})", code="node-missing") from error
        self._ids = itertools.count(1)
        self._pending: dict[int, Future[Any]] = {}
        self._lock = threading.Lock()
        self._progress: dict[str, ProgressCallback] = {}
        self._hello: Future[Any] = Future()
        self._dead: str | None = None
        self._reader = threading.Thread(target=self._read, name="codebox-sidecar-reader", daemon=True)
        self._reader.start()
        try:
            self._hello.result(timeout=start_timeout_s)
        except FutureTimeout:
            self.kill("did not start in time")
            raise SandboxError("The Playground sidecar did not start", code="sidecar-start-timeout") from None
        except SandboxError:
            raise
        atexit.register(self.close)

    @property
    def pid(self) -> int:
        return self._proc.pid

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
                continue
            with self._lock:
                future = self._pending.pop(message.get("id"), None)
            if future is None:
                continue
            if message.get("ok"):
                future.set_result(message.get("result"))
            else:
                error = message.get("error") or {}
                future.set_exception(SandboxError(
                    str(error.get("message", "sidecar error")), code=str(error.get("code", "sidecar-error"))
                ))
        self._mark_dead(f"exited with code {self._proc.wait()}")

    def _mark_dead(self, reason: str) -> None:
        if self._dead is None:
            self._dead = reason
        if not self._hello.done():
            self._hello.set_exception(SandboxError(f"The Playground sidecar {reason}", code="sidecar-crashed",
                                                   details={"log": str(self.log_path)}))
        with self._lock:
            pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(SandboxError(
                    f"The Playground sidecar {reason}", code="sidecar-crashed",
                    details={"log": str(self.log_path), "tail": self.log_tail()},
                ))

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def request(self, op: str, params: dict[str, Any], timeout_s: float) -> Any:
        if not self.alive:
            raise SandboxError(f"The Playground sidecar {self._dead or 'is not running'}", code="sidecar-crashed")
        request_id = next(self._ids)
        future: Future[Any] = Future()
        with self._lock:
            self._pending[request_id] = future
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
                code="sandbox-timeout", details={"op": op, "timeoutSeconds": timeout_s},
            ) from None

    def kill(self, reason: str = "was killed") -> None:
        if self._proc.poll() is None:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self._proc.wait(timeout=10)
        shutil.rmtree(self.tmp_dir, ignore_errors=True)
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
