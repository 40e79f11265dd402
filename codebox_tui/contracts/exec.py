"""``codebox exec`` contracts: the request and the structured result (docs/exec.md)."""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field

from codebox_tui.contracts.common import Contract

EXEC_RESULT_SCHEMA: Final = "wp-codebox/exec-result/v1"

Capability = Literal["read", "write", "eval"]
Classification = Literal["read_only", "sandbox_write", "eval"]
CAPABILITIES: Final[tuple[str, ...]] = ("read", "write", "eval")
# error codes of a command refused before it ran (docs/exec.md): a capability it lacks, the eval policy, a site
# selection or WP-CLI flag the sandbox locks
EXEC_DENIAL_CODES: Final[tuple[str, ...]] = ("capability-denied", "eval-policy", "wp-site-locked", "wp-flag-refused")


class ExecLimits(Contract):
    """Per-command limits, each enforced by the interpreter and reported when hit."""

    timeoutMs: int = Field(default=30_000, ge=1)
    maxOutputBytes: int = Field(default=1024 * 1024, ge=1)
    maxLoopIterations: int = Field(default=10_000, ge=1)
    maxCallDepth: int = Field(default=50, ge=1)


class ExecRequest(Contract):
    command: str = Field(min_length=1)
    cwd: str = "/wordpress"
    capabilities: list[Capability] = Field(default_factory=lambda: list[Capability](["read"]))
    limits: ExecLimits = Field(default_factory=ExecLimits)


class ExecError(Contract):
    code: str
    message: str
    details: dict[str, Any] | None = None


class ExecResult(Contract):
    """What one exec returns, always structured; non-zero exits and stderr are reported as they are."""

    schema_: Literal["wp-codebox/exec-result/v1"] = Field(default=EXEC_RESULT_SCHEMA, alias="schema")
    sandboxId: str
    runtimeId: str | None = None
    command: str
    cwd: str
    capabilities: list[Capability]
    classification: Classification | None = None
    reason: str | None = None
    stdout: str = ""
    stderr: str = ""
    exitCode: int
    limits: ExecLimits
    limitExceeded: Literal["timeoutMs", "maxOutputBytes", "maxLoopIterations", "maxCallDepth"] | None = None
    error: ExecError | None = None
    changedFiles: bool = False
    durationMs: int = 0
