"""``codebox exec``: a command line run in the sandbox by the sidecar's bash interpreter (docs/exec.md).

The sidecar classifies the command from its parsed form, checks it against the capabilities before
anything runs, and runs it over the sandbox's own file system; this module sends the request,
redacts the answer and records it in the run's ``events.jsonl`` / ``commands.jsonl`` (so it is in
the bundle) with its classification and capabilities.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from codebox_tui.contracts.common import new_id, utc_now_iso
from codebox_tui.contracts.exec import (
    CAPABILITIES,
    EXEC_RESULT_SCHEMA,
    ExecError,
    ExecLimits,
    ExecRequest,
    ExecResult,
)
from codebox_tui.contracts.runtime import ENVELOPE_OUTPUT_REF, CommandError, CommandResultEnvelope, ExecutionResult
from codebox_tui.errors import BadInputError, PolicyDeniedError, SandboxError
from codebox_tui.runtime.commands import sandbox_env
from codebox_tui.settings import NODE_BRIDGE_DIR, get_settings

if TYPE_CHECKING:
    from codebox_tui.runtime.session import RunSession

__all__ = [
    "EXEC_RESULT_SCHEMA",
    "ExecLimits",
    "ExecRequest",
    "ExecResult",
    "check_before_boot",
    "classify_on_host",
    "parse_capabilities",
    "run_exec",
]

# Refusals of the command line itself (classify.mjs's ExecRefused codes) that are policy, not malformed input.
LIMIT_NAMES = tuple(ExecLimits.model_fields)
POLICY_REFUSALS = ("capability-denied", "eval-policy", "wp-site-locked", "wp-flag-refused")
_CLASSIFY_SCRIPT = (
    "import { classifyScript, missingCapabilities, NEEDS } from './classify.mjs';"
    "const [command, caps] = JSON.parse(process.argv[1]);"
    "let out;"
    "try { const c = classifyScript(command);"
    " out = { classification: c.classification, reason: c.reason, needed: NEEDS[c.classification],"
    " missing: missingCapabilities(c.classification, caps) }; }"
    "catch (err) { if (!err || !err.code) throw err; out = { error: { code: err.code, message: err.message } }; }"
    "process.stdout.write(JSON.stringify(out));"
)


def parse_capabilities(text: str | Iterable[str], field: str = "--capabilities") -> list[str]:
    """``read,write`` → ``["read", "write"]`` (``execute_read`` etc. accepted); ``read`` is always in force."""
    items = text.split(",") if isinstance(text, str) else list(text)
    found = {"read"}
    for raw in items:
        name = raw.strip().removeprefix("execute_")
        if not name:
            continue
        if name not in CAPABILITIES:
            raise BadInputError(
                f"{field}: unknown capability {raw.strip()!r}; expected a comma-separated list of "
                f"{', '.join(CAPABILITIES)}",
                code="invalid-capability",
                field=field,
            )
        found.add(name)
    return [c for c in CAPABILITIES if c in found]


def classify_on_host(request: ExecRequest) -> dict[str, Any]:
    """``request.command`` classified by the shell's own classifier (classify.mjs, run by Node on the host: it
    only parses the user's command line): ``classification``, ``reason``, ``needed``, ``missing``, or ``error``."""
    try:
        done = subprocess.run(
            [
                get_settings().node,
                "--input-type=module",
                "-e",
                _CLASSIFY_SCRIPT,
                json.dumps([request.command, request.capabilities]),
            ],
            cwd=NODE_BRIDGE_DIR,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        answer = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError):
        answer = None
    if not isinstance(answer, dict):
        raise SandboxError("could not classify the command (Node classifier failed)", code="classifier-failed")
    return answer


def _trusted_classification(raw: dict[str, Any], request: ExecRequest) -> dict[str, Any]:
    """The native shell's answer with the classification and reason the host computes itself: the answer is
    written inside the sandbox's wall (runtime/native_shell.py), so what it says the command was is not
    evidence; the capabilities are the request's."""
    host = classify_on_host(request)
    error = raw.get("error")
    exit_code = raw.get("exitCode")
    return {
        "stdout": str(raw.get("stdout") or ""),
        "stderr": str(raw.get("stderr") or ""),
        "exitCode": exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else 1,
        "cwd": raw.get("cwd") if isinstance(raw.get("cwd"), str) else request.cwd,
        "limitExceeded": raw.get("limitExceeded") if raw.get("limitExceeded") in LIMIT_NAMES else None,
        "error": {
            "code": str(error.get("code")),
            "message": str(error.get("message")),
            "details": error.get("details") if isinstance(error.get("details"), dict) else None,
        }
        if isinstance(error, dict)
        else None,
        "changedFiles": raw.get("changedFiles") is True,
        "classification": host.get("classification"),
        "reason": host.get("reason"),
        "capabilities": request.capabilities,
    }


def check_before_boot(request: ExecRequest) -> None:
    """Classify ``request.command`` with the sidecar's own classifier (classify.mjs, run by Node on the
    host: it only parses the user's command line) and refuse it before any sandbox boots when its
    capabilities do not allow it (docs/exec.md, "Classification"). The sidecar classifies again before
    running, so this check only saves the boot; it is never the only one."""
    answer = classify_on_host(request)
    error = answer.get("error")
    if isinstance(error, dict):
        code, message = str(error.get("code")), str(error.get("message"))
        if code in POLICY_REFUSALS:
            raise PolicyDeniedError(message, code=code, field="command")
        raise BadInputError(message, code=code, field="command")
    missing = [str(m) for m in answer.get("missing") or []]
    if missing:
        classification = str(answer.get("classification"))
        allow = ",".join(c for c in CAPABILITIES if c in {*request.capabilities, *missing})
        raise PolicyDeniedError(
            f"denied before boot: this command is classified {classification} ({answer.get('reason')}) and needs "
            f"the {' and '.join(missing)} capabilit{'ies' if len(missing) > 1 else 'y'}; "
            f"allow it with --capabilities {allow}",
            code="capability-denied",
            field="--capabilities",
            details={"classification": classification, "needed": answer.get("needed"), "missing": missing},
        )


def run_exec(session: RunSession, request: ExecRequest) -> ExecResult:
    """Run ``request`` in ``session``'s sandbox (booting it if needed) and record it in the run."""
    sandbox = session.boot_sandbox()
    sidecar = getattr(sandbox, "sidecar", None)
    native_shell = getattr(sandbox, "shell", None)  # the native backend's: runtime/native_shell.py
    if sidecar is None and native_shell is None:
        raise SandboxError("this sandbox backend cannot run exec commands", code="exec-unsupported")
    settings = get_settings()
    limits = request.limits.model_copy(
        update={"maxOutputBytes": min(request.limits.maxOutputBytes, int(settings.max_command_output_bytes))}
    )

    command_id = new_id("command")
    started_at, started = utc_now_iso(), time.monotonic()
    session.emit(
        "exec.started",
        {"id": command_id, "command": request.command, "cwd": request.cwd, "capabilities": request.capabilities},
    )
    params: dict[str, Any] = {
        "sandbox": sandbox.id,
        "command": request.command,
        "cwd": request.cwd,
        "capabilities": request.capabilities,
        "capabilityNames": list(CAPABILITIES),
        "limits": limits.model_dump(),
        "env": sandbox_env(session),
    }
    # the interpreter stops itself at limits.timeoutMs; the request deadline is a backstop (a PHP call
    # in flight cannot be interrupted: past it the sidecar is killed, as for any command)
    try:
        if sidecar is not None:
            raw = sidecar.request("exec", params, limits.timeoutMs / 1000 + 30)
        else:
            assert native_shell is not None
            raw = _trusted_classification(native_shell(params, limits.timeoutMs / 1000 + 30), request)
    except SandboxError as error:
        raw = {
            "exitCode": 1,
            "stderr": error.message,
            "error": {"code": error.code, "message": error.message, "details": error.details or None},
        }
        _record(session, command_id, _result(session, sandbox.id, request, limits, raw, started), started_at)
        raise
    result = _result(session, sandbox.id, request, limits, raw, started)
    _record(session, command_id, result, started_at)
    return result


def _result(
    session: RunSession, sandbox_id: str, request: ExecRequest, limits: ExecLimits, raw: dict[str, Any], started: float
) -> ExecResult:
    redact = session.redact
    error = raw.get("error")
    return ExecResult(
        sandboxId=sandbox_id,
        runtimeId=session.runtime_id,
        command=request.command,
        cwd=str(raw.get("cwd") or request.cwd),
        capabilities=raw.get("capabilities") or request.capabilities,
        classification=raw.get("classification"),
        reason=raw.get("reason"),
        stdout=redact(str(raw.get("stdout") or "")),
        stderr=redact(str(raw.get("stderr") or "")),
        exitCode=int(raw["exitCode"]) if raw.get("exitCode") is not None else 1,
        limits=limits,
        limitExceeded=raw.get("limitExceeded"),
        error=ExecError(
            code=str(error["code"]),
            message=redact(str(error["message"])),
            details=redact.value(error.get("details") or None),
        )
        if error
        else None,
        changedFiles=bool(raw.get("changedFiles")),
        durationMs=int((time.monotonic() - started) * 1000),
    )


def _record(session: RunSession, command_id: str, result: ExecResult, started_at: str) -> None:
    diagnostics = {
        "command": "exec",
        "classification": result.classification,
        "reason": result.reason,
        "capabilities": result.capabilities,
        "cwd": result.cwd,
        "limits": result.limits.model_dump(),
        "limitExceeded": result.limitExceeded,
        "changedFiles": result.changedFiles,
    }
    envelope = CommandResultEnvelope(
        status="ok" if result.exitCode == 0 and result.error is None else "error",
        diagnostics={**diagnostics, "outputRef": dict(ENVELOPE_OUTPUT_REF)},  # the output is kept once
        error=CommandError(code=result.error.code, message=result.error.message, data=result.error.details)
        if result.error
        else None,
    )
    execution = ExecutionResult(
        id=command_id,
        command="exec",
        args=[result.command],
        exitCode=result.exitCode,
        stdout=result.stdout,
        stderr=result.stderr,
        result=envelope,
        diagnostics=diagnostics,
        startedAt=started_at,
        finishedAt=utc_now_iso(),
        durationMs=result.durationMs,
    )
    session._record(execution)  # the run's one writer of commands.jsonl (runtime/session.py)
    level = "info" if result.exitCode == 0 else ("warning" if result.error is None else "error")
    kind = "exec.denied" if result.error and result.error.code == "capability-denied" else "exec.finished"
    session.emit(
        kind,
        {
            "id": command_id,
            "command": result.command,
            "exitCode": result.exitCode,
            "classification": result.classification,
            "capabilities": result.capabilities,
            "cwd": result.cwd,
            "limitExceeded": result.limitExceeded,
            **({"error": result.error.model_dump(exclude_none=True)} if result.error else {}),
            "durationMs": result.durationMs,
        },
        level=level,
    )
