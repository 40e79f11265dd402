"""Runtime contracts: policy, mounts, the command catalog, execution results and events."""

from __future__ import annotations

import re
from typing import Any, Final, Literal

from pydantic import Field, field_validator

from codebox_tui.contracts.common import Contract, OpenContract

POLICY_SCHEMA: Final = "wp-codebox/runtime-policy/v1"
CATALOG_SCHEMA: Final = "wp-codebox/command-catalog/v1"
COMMAND_RESULT_SCHEMA: Final = "wp-codebox/runtime-command-result/v1"
RUN_OUTPUT_SCHEMA: Final = "wp-codebox/run/v1"
BOOT_OUTPUT_SCHEMA: Final = "wp-codebox/boot/v1"
EVENT_SCHEMA: Final = "wp-codebox/runtime-event/v1"
# Where a recorded command's output is, instead of a second copy (docs/contracts.md, "Execution results"):
# the envelope's ``diagnostics.outputRef`` (JSON pointers into the enclosing ExecutionResult), and in the
# run document an ``executions`` entry's ``diagnostics.outputRef`` when ``execution`` carries it.
ENVELOPE_OUTPUT_REF: Final = {"stdout": "/stdout", "stderr": "/stderr"}
RUN_DOCUMENT_OUTPUT_REF: Final = {"stdout": "/execution/stdout", "stderr": "/execution/stderr"}

ENV_NAME_PATTERN = r"^[A-Z_][A-Z0-9_]*$"


class NetworkAllowHosts(Contract):
    allowHosts: list[str] = Field(min_length=1)

    @field_validator("allowHosts")
    @classmethod
    def _non_empty(cls, hosts: list[str]) -> list[str]:
        for host in hosts:
            if not host.strip():
                raise ValueError("allowHosts entries must be non-empty host names")
        return hosts


class RuntimePolicy(Contract):
    """What a sandbox may do. ``commands`` is a hard allow-list checked before execution.

    ``secrets`` is ``"none"``, ``"connector-scoped"`` (reference values) or an allow-list of
    environment variable names whose values are passed in and redacted from every output.
    """

    network: Literal["allow", "deny"] | NetworkAllowHosts = "deny"
    filesystem: Literal["sandbox", "readonly-mounts", "readwrite-mounts"] = "readwrite-mounts"
    commands: list[str] = Field(min_length=1)
    secrets: Literal["none", "connector-scoped"] | list[str] = "none"
    approvals: Literal["never", "on-write", "on-command"] = "never"

    @field_validator("commands")
    @classmethod
    def _commands_non_empty(cls, commands: list[str]) -> list[str]:
        for command in commands:
            if not command.strip():
                raise ValueError("command ids must be non-empty strings")
        return list(dict.fromkeys(commands))

    @field_validator("secrets")
    @classmethod
    def _secret_names(cls, secrets: str | list[str]) -> str | list[str]:
        if isinstance(secrets, list):
            for name in secrets:
                if not re.match(ENV_NAME_PATTERN, name):
                    raise ValueError(f"secret name {name!r} must match {ENV_NAME_PATTERN}")
        return secrets

    @property
    def secret_names(self) -> list[str]:
        return list(self.secrets) if isinstance(self.secrets, list) else []

    @property
    def network_denied(self) -> bool:
        return self.network == "deny"


class MountSpec(Contract):
    """A host folder or file made visible inside the sandbox."""

    type: Literal["directory", "file"] = "directory"
    source: str
    target: str
    mode: Literal["readonly", "readwrite"] = "readwrite"
    captureArtifacts: bool = True
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def live(self) -> bool:
        """A read-write mount the sandbox writes through to the host folder (``HOST:SANDBOX:live``).
        The wire ``mode`` stays ``readwrite``; live-ness is Codebox's own, kept in ``metadata`` under
        :data:`LIVE_MOUNT_KEY` so bundles show it. Every other read-write mount works on a private copy
        (README, "Mounts")."""
        return self.mode == "readwrite" and self.metadata.get(LIVE_MOUNT_KEY) is True

    @property
    def write_mode(self) -> str:
        """``readonly``, ``copy-on-write`` (the read-write default) or ``live``."""
        if self.mode == "readonly":
            return "readonly"
        return "live" if self.live else "copy-on-write"


# MountSpec.metadata key (Codebox-owned) that makes a read-write mount write through to the host.
LIVE_MOUNT_KEY = "codeboxLive"


class CommandArg(Contract):
    name: str
    description: str
    required: bool = False
    repeatable: bool = False
    format: str | None = None


class CommandSpec(Contract):
    id: str
    description: str
    acceptedArgs: list[CommandArg] = Field(default_factory=list)
    outputShape: str
    policyRequirement: str
    requiresPolicyCommands: list[str] = Field(default_factory=list)
    recipe: bool = True
    handler: str
    metadata: dict[str, Any] = Field(default_factory=dict)


class CommandCatalog(Contract):
    schema_: Literal["wp-codebox/command-catalog/v1"] = Field(default=CATALOG_SCHEMA, alias="schema")
    commands: list[CommandSpec]


class CommandError(Contract):
    code: str
    message: str
    data: dict[str, Any] | None = None


class CommandResultEnvelope(Contract):
    schema_: Literal["wp-codebox/runtime-command-result/v1"] = Field(default=COMMAND_RESULT_SCHEMA, alias="schema")
    status: Literal["ok", "error"]
    stdout: str | None = None
    stderr: str | None = None
    json_: Any | None = Field(default=None, alias="json")
    diagnostics: dict[str, Any] | None = None
    artifactRefs: list[dict[str, Any]] | None = None
    error: CommandError | None = None


class ExecutionResult(Contract):
    """One command run inside a sandbox (a line of ``commands.jsonl``)."""

    id: str
    command: str
    args: list[str] = Field(default_factory=list)
    exitCode: int
    stdout: str = ""
    stderr: str = ""
    result: CommandResultEnvelope | None = None
    diagnostics: dict[str, Any] | None = None
    artifactRefs: list[dict[str, Any]] | None = None
    startedAt: str
    finishedAt: str
    durationMs: int = 0


class RuntimeEvent(OpenContract):
    """One line of ``events.jsonl``: ``{id, type, timestamp, level, data?}``."""

    id: str
    type: str
    timestamp: str
    level: Literal["debug", "info", "warning", "error"] = "info"
    data: dict[str, Any] | None = None


class RuntimeInfo(OpenContract):
    id: str
    backend: str = "wordpress-playground"
    environment: dict[str, Any] = Field(default_factory=dict)
    createdAt: str
    status: Literal["created", "running", "destroyed", "failed"] = "created"
    previewUrl: str | None = None


class ArtifactPreview(OpenContract):
    """The run's live preview as ``run --json`` reports it (docs/contracts.md, "Run and
    boot outputs"): where it was served, and whether it was held after the command. Printed once the run has
    ended, so its ``status`` is always ``expired-on-completion``; a held one says for how long it was asked to
    be held (``holdSeconds``), when the hold began and ended and why it ended (``endedBy``)."""

    url: str
    localUrl: str
    publicUrl: str | None = None
    status: Literal["available", "expired-on-completion"] = "expired-on-completion"
    lifecycle: Literal["held-after-run", "destroyed-on-completion"]
    source: Literal["public-url-override", "live-playground", "live-native"]
    holdSeconds: float | None = None
    heldAt: str | None = None
    endedAt: str | None = None
    endedBy: Literal["expired", "closed", "cancelled", "interrupted"] | None = None


class RunOutput(Contract):
    """What ``codebox run --json`` prints."""

    schema_: Literal["wp-codebox/run/v1"] = Field(default=RUN_OUTPUT_SCHEMA, alias="schema")
    success: bool
    runtime: RuntimeInfo
    executions: list[ExecutionResult] = Field(default_factory=list)
    execution: ExecutionResult | None = None
    artifacts: dict[str, Any] = Field(default_factory=dict)
    error: CommandError | None = None
    timings: dict[str, float] = Field(default_factory=dict)
    # the site-state risk codes that keep the verdict from being clean (success is then false; docs/site-state.md,
    # "Verdicts"), and each with its subject and message
    siteStateRisks: list[str] | None = None
    siteStateRiskDetails: list[dict[str, str]] | None = None
    preview: ArtifactPreview | None = None  # when the sandbox booted with a preview


class BootOutput(Contract):
    schema_: Literal["wp-codebox/boot/v1"] = Field(default=BOOT_OUTPUT_SCHEMA, alias="schema")
    success: bool
    runtime: RuntimeInfo
    previewUrl: str | None = None
    holdSeconds: float | None = None
    artifacts: dict[str, Any] = Field(default_factory=dict)
    error: CommandError | None = None
