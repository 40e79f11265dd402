"""The local control channel of a held sandbox (docs/exec.md, "Held sandboxes").

The process holding a sandbox (``codebox boot --hold``) serves exec requests on a Unix socket
``$CODEBOX_HOME/held/<runtime id>.sock``: the folder is 0700, the socket 0600, and every connection's
peer must be the same user (``SO_PEERCRED``). One JSON request per connection (an ExecRequest), one
JSON answer (an ExecResult, or ``{"error": ...}``). Requests run one at a time, through the same
:func:`run_exec` as a fresh sandbox, so they are recorded in the held run's streams. The request
``{"op": "release"}`` ends the hold early (``codebox release``): the holder captures its bundle as when the hold
expires, and answers ``{"released": true}``.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from codebox_tui.contracts.exec import ExecRequest, ExecResult
from codebox_tui.errors import BadInputError, CodeboxError, SandboxError
from codebox_tui.runtime.exec import run_exec
from codebox_tui.settings import get_settings

if TYPE_CHECKING:
    from codebox_tui.runtime.session import RunSession

MAX_REQUEST_BYTES = 1024 * 1024
RELEASE_REQUEST = b'{"op": "release"}\n'
_ID_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-")


def held_dir() -> Path:
    return get_settings().home / "held"


def socket_path(held_id: str) -> Path:
    if not held_id or set(held_id) - _ID_CHARS or len(held_id) > 80:
        raise BadInputError(
            f"--sandbox {held_id!r} is not a held sandbox id (e.g. runtime-…)",
            code="invalid-sandbox-id",
            field="--sandbox",
        )
    return held_dir() / f"{held_id}.sock"


def _peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


def _read_all(conn: socket.socket) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            raise BadInputError("exec request too large", code="request-too-large", field="command")
        if chunk.endswith(b"\n"):
            break
    return b"".join(chunks)


class HeldExecServer:
    """Serves exec requests for ``session`` until :meth:`close`; a release request calls ``on_release``."""

    def __init__(self, session: RunSession, on_release: Callable[[], None] | None = None) -> None:
        self.session = session
        self.on_release = on_release
        self.path = socket_path(session.runtime_id)
        directory = self.path.parent
        directory.mkdir(parents=True, exist_ok=True)
        directory.chmod(0o700)
        self.path.unlink(missing_ok=True)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            self._sock.bind(str(self.path))
        finally:
            os.umask(old)
        self.path.chmod(0o600)
        self._sock.listen(4)
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._serve, name="codebox-held-exec", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), name="codebox-held-exec-conn", daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        answer: dict[str, Any]
        with conn:
            try:
                if _peer_uid(conn) != os.getuid():
                    raise BadInputError(
                        "exec on a held sandbox is only for the user who holds it", code="exec-peer-refused"
                    )
                raw = _read_all(conn)
                if _is_release(raw):
                    if self.on_release is None:
                        raise BadInputError(
                            "this held sandbox cannot be released from outside", code="release-unavailable"
                        )
                    self.session.emit("runtime.release-requested", {})
                    self.on_release()
                    answer = {"released": True}
                else:
                    answer = self._exec(raw)
            except ValidationError as error:
                first = error.errors()[0]
                answer = {
                    "error": {
                        "code": "invalid-exec-request",
                        "field": ".".join(map(str, first["loc"])),
                        "message": f"invalid exec request: {first['msg']}",
                    }
                }
            except CodeboxError as error:
                answer = {"error": error.to_dict()}
            except Exception as error:  # the holding process keeps serving; the caller gets the reason
                answer = {"error": {"code": "exec-failed", "message": str(error)}}
            try:
                conn.sendall(json.dumps(answer).encode() + b"\n")
            except OSError:
                pass

    def _exec(self, raw: bytes) -> dict[str, Any]:
        request = ExecRequest.model_validate_json(raw)
        with self._lock:
            return run_exec(self.session, request).model_dump(mode="json", by_alias=True, exclude_none=True)

    def close(self) -> None:
        self._closed = True
        try:
            self._sock.close()
        finally:
            self.path.unlink(missing_ok=True)


def _is_release(raw: bytes) -> bool:
    try:
        doc = json.loads(raw)
    except ValueError:
        return False
    return isinstance(doc, dict) and doc.get("op") == "release"


def serve_held(session: RunSession, on_release: Callable[[], None] | None = None) -> HeldExecServer | None:
    """Serve exec (and release, with ``on_release``) for a held sandbox; a socket that cannot be made (e.g. a
    Codebox home path longer than a Unix socket path may be) leaves the hold itself working and is reported in
    the run's events."""
    try:
        return HeldExecServer(session, on_release)
    except OSError as error:
        session.emit(
            "exec.unavailable",
            {"reason": f"cannot serve exec on {socket_path(session.runtime_id)}: {error.strerror or error}"},
            level="warning",
        )
        return None


def exec_on_held(held_id: str, request: ExecRequest, timeout_s: float) -> ExecResult:
    """Send ``request`` to the process holding ``held_id`` and return its answer."""
    answer = _ask_held(held_id, request.model_dump_json(by_alias=True).encode() + b"\n", timeout_s)
    if "error" in answer and "schema" not in answer:
        error = answer["error"]
        raise SandboxError(str(error.get("message", "exec failed")), code=str(error.get("code", "exec-failed")))
    return ExecResult.model_validate(answer)


def release_held(held_id: str, timeout_s: float = 30.0) -> None:
    """Ask the process holding ``held_id`` to end its hold now (it then captures its bundle and exits)."""
    answer = _ask_held(held_id, RELEASE_REQUEST, timeout_s)
    if answer.get("released") is not True:
        error = answer.get("error") or {}
        raise SandboxError(
            str(error.get("message", "the holder did not release")), code=str(error.get("code", "release-failed"))
        )


def _ask_held(held_id: str, payload: bytes, timeout_s: float) -> dict[str, Any]:
    """One request to the holder of ``held_id``, its JSON answer."""
    path = socket_path(held_id)
    if not path.exists():
        raise BadInputError(
            f"no held sandbox {held_id} (start one with `codebox boot --hold`)",
            code="no-held-sandbox",
            field="--sandbox",
        )
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout_s)
        try:
            conn.connect(str(path))
            conn.sendall(payload)
            conn.shutdown(socket.SHUT_WR)
            raw = b""
            while chunk := conn.recv(1 << 20):
                raw += chunk
        except (ConnectionRefusedError, FileNotFoundError):
            raise BadInputError(
                f"held sandbox {held_id} is not answering (its holder has exited)",
                code="no-held-sandbox",
                field="--sandbox",
            ) from None
        except TimeoutError:
            raise SandboxError(
                f"held sandbox {held_id} did not answer within {timeout_s:g} s", code="sandbox-timeout"
            ) from None
    try:
        answer = json.loads(raw)
    except ValueError:
        raise SandboxError(f"held sandbox {held_id} sent an unreadable answer", code="exec-failed") from None
    if not isinstance(answer, dict):
        raise SandboxError(f"held sandbox {held_id} sent an unreadable answer", code="exec-failed")
    return answer
