"""A host-command agent speaking the JSON-lines protocol (docs/agent-tasks.md, "The JSON-lines protocol").

Codebox starts the program with no shell, in an empty scratch folder, with a scrubbed environment (``PATH``,
``LANG``, ``HOME``/``TMPDIR`` pointing at the scratch folder, and only the variables the request names in
``agent_env``), in its own process group. It writes one ``task`` line on the agent's stdin, answers each
``tool_call`` line with a ``tool_result`` line, and stops at the agent's ``final`` line, at end of output,
at the time limit or on cancel; whatever is still running is then killed with its process group. The agent
gets no host path (the scratch folder is empty and removed afterwards), only tools.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

from pydantic import ValidationError

from codebox_tui.agents.registry import ToolDispatcher
from codebox_tui.bundle.redact import Redactor
from codebox_tui.contracts.agent import AgentMessage

MAX_LINE_BYTES = 4 * 1024 * 1024
MAX_KEPT_BYTES = 64 * 1024  # stdout / stderr kept in the transcript, each
MAX_BAD_LINES = 50
EXIT_GRACE_S = 5.0


@dataclass
class HostAgentRun:
    """What the agent did: its exit code (negative: killed by that signal; None: still running when killed),
    its final message, why it stopped early (timeout, cancelled, protocol), the bounded protocol output and
    stderr."""

    exit_code: int | None = None
    final: AgentMessage | None = None
    stopped: str | None = None  # timeout | cancelled | protocol | None
    killed: bool = False  # Codebox killed it (after its final line's grace period, or on a stop)
    problems: list[str] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0


class _Bounded:
    def __init__(self, limit: int = MAX_KEPT_BYTES) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.dropped = 0
        self.limit = limit

    def add(self, data: bytes) -> None:
        room = self.limit - self.size
        if room > 0:
            self.parts.append(data[:room])
            self.size += min(len(data), room)
        self.dropped += max(0, len(data) - max(room, 0))

    def text(self) -> str:
        out = b"".join(self.parts).decode("utf-8", "replace")
        return out + (f"\n[codebox: {self.dropped} more bytes not kept]\n" if self.dropped else "")


def agent_environment(names: list[str], scratch: str, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The scrubbed environment: nothing of the parent's but ``PATH`` and the named variables."""
    parent = os.environ if environ is None else environ
    env = {
        "PATH": parent.get("PATH", os.defpath),
        "LANG": "C.UTF-8",
        "HOME": scratch,
        "TMPDIR": scratch,
        "CODEBOX_AGENT_PROTOCOL": "codebox/agent-message/v1",
    }
    for name in names:
        if name in parent:
            env[name] = parent[name]
    return env


def run_host_agent(
    argv: list[str],
    task_message: dict[str, Any],
    dispatcher: ToolDispatcher,
    *,
    timeout_s: float,
    env_names: list[str],
    redact: Redactor,
    cancelled: Callable[[], bool] = lambda: False,
) -> HostAgentRun:
    started = time.monotonic()
    deadline = started + timeout_s
    outcome = HostAgentRun()
    scratch = tempfile.mkdtemp(prefix="codebox-agent-")
    protocol_out, errors_out = _Bounded(), _Bounded()
    try:
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=scratch,
                env=agent_environment(env_names, scratch),
                start_new_session=True,
                close_fds=True,
            )
        except OSError as error:
            outcome.problems.append(f"the agent could not start: {error.strerror or error}")
            outcome.stopped = "protocol"
            return outcome
        lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=_read_lines, args=(proc.stdout, lines), daemon=True).start()
        stderr_thread = threading.Thread(target=_drain, args=(proc.stderr, errors_out), daemon=True)
        stderr_thread.start()
        assert proc.stdin is not None
        _send(proc.stdin, task_message, redact, protocol_out)
        bad = 0
        while True:
            if cancelled():
                outcome.stopped = "cancelled"
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                outcome.stopped = "timeout"
                outcome.problems.append(f"the agent did not finish within {timeout_s:g} s")
                break
            try:
                raw = lines.get(timeout=min(remaining, 0.25))
            except queue.Empty:
                continue
            if raw is None:
                break  # end of output: the agent exited (or closed stdout)
            protocol_out.add(redact.data(raw))
            message = _parse(raw)
            if isinstance(message, str):
                bad += 1
                outcome.problems.append(redact(message))
                if bad >= MAX_BAD_LINES:
                    outcome.stopped = "protocol"
                    break
                continue
            if message.type == "final":
                outcome.final = message
                break
            if message.type == "tool_call":
                result = dispatcher.call(str(message.tool), message.input, message.id)
                reply = {
                    "schema": "codebox/agent-message/v1",
                    "type": "tool_result",
                    "id": message.id,
                    "result": result.model_dump(mode="json", by_alias=True, exclude_none=True),
                }
                if not _send(proc.stdin, reply, redact, protocol_out):
                    break
        _close(proc.stdin)
        outcome.exit_code, outcome.killed = _finish(proc, grace_s=0 if outcome.stopped else EXIT_GRACE_S)
        stderr_thread.join(timeout=2)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        outcome.duration_s = round(time.monotonic() - started, 3)
        outcome.stdout = redact(protocol_out.text())
        outcome.stderr = redact(errors_out.text())
    return outcome


def _parse(raw: bytes) -> AgentMessage | str:
    if len(raw) > MAX_LINE_BYTES:
        return f"a line of {len(raw)} bytes is over the {MAX_LINE_BYTES}-byte limit"
    text = raw.decode("utf-8", "replace").strip()
    if not text:
        return "an empty line"
    try:
        data = json.loads(text)
    except ValueError:
        return f"not a JSON line: {text[:200]}"
    if not isinstance(data, dict):
        return "a protocol line must be a JSON object"
    data.setdefault("schema", "codebox/agent-message/v1")
    try:
        return AgentMessage.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "$"
        return f"invalid protocol line at {where}: {first['msg']}"


def _send(stream: IO[bytes], message: dict[str, Any], redact: Redactor, record: _Bounded) -> bool:
    data = (json.dumps(redact.value(message), ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass")
    record.add(data)
    try:
        stream.write(data)
        stream.flush()
    except (BrokenPipeError, OSError, ValueError):
        return False
    return True


def _read_lines(stream: IO[bytes] | None, out: queue.Queue[bytes | None]) -> None:
    assert stream is not None
    try:
        while True:
            line = stream.readline(MAX_LINE_BYTES + 1)
            if not line:
                break
            if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                while True:  # skip the rest of an over-long line
                    rest = stream.readline(MAX_LINE_BYTES)
                    if not rest or rest.endswith(b"\n"):
                        break
            out.put(line)
    except (OSError, ValueError):
        pass
    out.put(None)


def _drain(stream: IO[bytes] | None, keep: _Bounded) -> None:
    assert stream is not None
    try:
        while chunk := stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536):
            keep.add(chunk)
    except (OSError, ValueError):
        pass


def _close(stream: IO[bytes] | None) -> None:
    try:
        if stream is not None:
            stream.close()
    except (BrokenPipeError, OSError):
        pass


def _finish(proc: subprocess.Popen[bytes], *, grace_s: float) -> tuple[int | None, bool]:
    """Wait ``grace_s`` for the agent to exit, then kill its whole process group (the second value says
    whether it had to be killed). Children it left behind in its group are killed either way."""
    try:
        if grace_s > 0:
            code = proc.wait(timeout=grace_s)
            _kill_group(proc)
            return code, False
    except subprocess.TimeoutExpired:
        pass
    if proc.poll() is not None:
        _kill_group(proc)
        return proc.returncode, False
    return _kill(proc), True


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill(proc: subprocess.Popen[bytes]) -> int | None:
    _kill_group(proc)
    try:
        code = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        return None
    return code
