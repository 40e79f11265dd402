"""Errors users can cause, with stable codes and documented exit codes.

Every user-facing failure is a :class:`CodeboxError`. The CLI prints it as one clear
line (or a JSON envelope with ``--json``) and exits with its ``exit_code``; it never
shows a traceback for these.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class ExitCode(IntEnum):
    """Process exit codes, documented in the README."""

    OK = 0
    FAILED = 1  # the thing ran but its verdict is negative (invalid bundle, non-zero command, failing tests)
    BAD_INPUT = 2  # malformed input: usage, recipe, bundle, patch, mount, policy
    POLICY_DENIED = 3  # the runtime policy refused a command
    SANDBOX_FAILURE = 4  # the sandbox could not boot, crashed or timed out
    CONFLICT = 5  # apply-back refused: digest mismatch, target changed since the run
    HOST_IO = 6  # the host could not read or write a file or folder (disk full, permissions, vanished path)
    INTERRUPTED = 130


class CodeboxError(Exception):
    """A failure with a machine-readable ``code``, an optional ``field`` locator and details."""

    exit_code: ExitCode = ExitCode.BAD_INPUT

    def __init__(
        self,
        message: str,
        *,
        code: str = "codebox-error",
        field: str | None = None,
        details: dict[str, Any] | None = None,
        exit_code: ExitCode | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.field = field
        self.details = details or {}
        if exit_code is not None:
            self.exit_code = exit_code

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.field:
            out["field"] = self.field
        if self.details:
            out["details"] = self.details
        return out

    def __str__(self) -> str:
        where = f" ({self.field})" if self.field else ""
        return f"{self.message}{where}"


class BadInputError(CodeboxError):
    exit_code = ExitCode.BAD_INPUT


class PolicyDeniedError(CodeboxError):
    exit_code = ExitCode.POLICY_DENIED


class SandboxError(CodeboxError):
    """Boot failure, crash or timeout of a sandbox or its Node sidecar."""

    exit_code = ExitCode.SANDBOX_FAILURE


class ConflictError(CodeboxError):
    exit_code = ExitCode.CONFLICT


class HostIOError(CodeboxError):
    """A host file or folder could not be read or written (not the sandbox's doing, not malformed input)."""

    exit_code = ExitCode.HOST_IO
