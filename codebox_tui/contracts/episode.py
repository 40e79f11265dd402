"""Runtime episodes (docs/episodes.md): the envelopes of the episode trace
(``wp-codebox/runtime-episode-trace/v1`` and its action, observation and snapshot envelopes, with the
domain-separated digests of the reference), and Codebox's episode plan (``codebox/episode-plan/v1``),
the JSON document ``codebox episode run FILE`` reads.

The trace envelopes follow the reference's field names; ``resets``, ``observations`` and ``restores`` of
the trace are Codebox's own additions (the reference's trace validator allows extra keys).
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field, model_validator

from codebox_tui.contracts.canonical import domain_digest
from codebox_tui.contracts.common import Contract, Digest
from codebox_tui.contracts.runtime import RuntimePolicy
from codebox_tui.contracts.site_state import StateSection
from codebox_tui.versions import DEFAULT_WP_VERSION

EPISODE_TRACE_SCHEMA: Final = "wp-codebox/runtime-episode-trace/v1"
EPISODE_ACTION_SCHEMA: Final = "wp-codebox/runtime-episode-action/v1"
EPISODE_OBSERVATION_SCHEMA: Final = "wp-codebox/runtime-episode-observation/v1"
EPISODE_SNAPSHOT_SCHEMA: Final = "wp-codebox/runtime-episode-snapshot/v1"
EPISODE_PLAN_SCHEMA: Final = "codebox/episode-plan/v1"
EPISODE_RESULT_SCHEMA: Final = "codebox/episode-result/v1"

ObservationType = Literal[
    "runtime-info",
    "mounts",
    "files",
    "command-result",
    "wordpress-state",
    "http-response",
    "browser-result",
    "runtime-events",
    "runtime-logs",
]
OBSERVATION_TYPES: Final[tuple[str, ...]] = (
    "runtime-info",
    "mounts",
    "files",
    "command-result",
    "wordpress-state",
    "http-response",
    "browser-result",
    "runtime-events",
    "runtime-logs",
)
ActionKind = Literal["command", "filesystem", "http", "browser"]
# The semantics a snapshot envelope may carry (spec §10); anything else reads as not replayable.
SNAPSHOT_SEMANTICS: Final = ("metadata-only", "partial-replay", "replayable-runtime-state", "runtime-state-artifact")


def episode_digest(value: Any) -> Digest:
    """``sha256("wp-codebox/runtime-episode-trace/v1\\n" + stableJson(value))`` (spec §1.7)."""
    return Digest(value=domain_digest(EPISODE_TRACE_SCHEMA, value))


# -- the trace -----------------------------------------------------------------------------------
class EpisodeRef(Contract):
    """A reference from the trace to an envelope (``action``, ``execution``, ``observation``, ``snapshot``) or to a
    bundle file (then ``path`` is set and ``digest`` is the file's sha256)."""

    kind: str = Field(min_length=1)
    id: str = Field(min_length=1)
    digest: Digest
    path: str | None = None


class EpisodeAction(Contract):
    schema_: Literal["wp-codebox/runtime-episode-action/v1"] = Field(EPISODE_ACTION_SCHEMA, alias="schema")
    id: str = Field(min_length=1)
    kind: ActionKind = "command"
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    description: str | None = Field(None, min_length=1)
    timeoutMs: int | None = Field(None, ge=0)
    metadata: dict[str, Any] | None = None
    digest: Digest

    @staticmethod
    def digest_payload(
        kind: str,
        command: str,
        args: list[str],
        description: str | None,
        timeout_ms: int | None,
        metadata: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """The canonical action payload its digest covers (spec §1.7; absent optional keys left out)."""
        payload: dict[str, Any] = {"schema": EPISODE_ACTION_SCHEMA, "kind": kind, "command": command, "args": args}
        if description is not None:
            payload["description"] = description
        if timeout_ms is not None:
            payload["timeoutMs"] = timeout_ms
        if metadata is not None:
            payload["metadata"] = metadata
        return payload


class EpisodeObservation(Contract):
    schema_: Literal["wp-codebox/runtime-episode-observation/v1"] = Field(EPISODE_OBSERVATION_SCHEMA, alias="schema")
    id: str = Field(min_length=1)
    type: ObservationType
    data: Any
    observedAt: str = Field(min_length=1)
    artifactRefs: list[EpisodeRef] = Field(default_factory=list)
    digest: Digest

    @staticmethod
    def digest_payload(type: str, data: Any, observed_at: str, artifact_refs: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "schema": EPISODE_OBSERVATION_SCHEMA,
            "type": type,
            "data": data,
            "observedAt": observed_at,
            "artifactRefs": artifact_refs,
        }


class EpisodeSnapshot(Contract):
    schema_: Literal["wp-codebox/runtime-episode-snapshot/v1"] = Field(EPISODE_SNAPSHOT_SCHEMA, alias="schema")
    id: str = Field(min_length=1)
    createdAt: str = Field(min_length=1)
    semantics: str = Field(min_length=1)
    metadata: dict[str, Any]
    artifactRefs: list[EpisodeRef] = Field(default_factory=list)
    digest: Digest

    @staticmethod
    def digest_payload(
        id: str, created_at: str, semantics: str, metadata: dict[str, Any], artifact_refs: list[dict[str, Any]]
    ) -> dict[str, Any]:
        return {
            "schema": EPISODE_SNAPSHOT_SCHEMA,
            "id": id,
            "createdAt": created_at,
            "semantics": semantics,
            "metadata": metadata,
            "artifactRefs": artifact_refs,
        }


class EpisodeStep(Contract):
    """One action and what it did: ``execution`` is the command's ExecutionResult (its parsed ``result.json`` left
    out: the same bytes are in ``stdout``), ``executionRef.digest`` the episode digest of that object."""

    id: str = Field(min_length=1)
    index: int = Field(ge=0)
    action: EpisodeAction
    actionRef: EpisodeRef
    execution: dict[str, Any]
    executionRef: EpisodeRef
    observation: EpisodeObservation | None = None
    observationRef: EpisodeRef | None = None


class EpisodeReset(Contract):
    id: str = Field(min_length=1)
    runtime: dict[str, Any]
    observations: list[EpisodeObservation] = Field(default_factory=list)
    observationRefs: list[EpisodeRef] = Field(default_factory=list)
    restoredSnapshot: str | None = Field(None, description="the snapshot id restored before the reset observations")


class EpisodeRestore(Contract):
    """A snapshot restored into the episode's sandbox (Codebox's own record)."""

    id: str = Field(min_length=1)
    snapshotId: str
    restoredAt: str
    afterStep: int = Field(description="how many steps had run when it was restored")
    snapshotRef: EpisodeRef | None = Field(None, description="the snapshot envelope, when it was taken in this episode")
    source: str | None = Field(None, description="the snapshot document's path, when it came from another bundle")
    stats: dict[str, Any] = Field(default_factory=dict)


class EpisodeTrace(Contract):
    schema_: Literal["wp-codebox/runtime-episode-trace/v1"] = Field(EPISODE_TRACE_SCHEMA, alias="schema")
    version: Literal[1] = 1
    id: str = Field(min_length=1)
    createdAt: str
    runtime: dict[str, Any]
    reset: EpisodeReset
    steps: list[EpisodeStep] = Field(default_factory=list)
    snapshots: list[EpisodeSnapshot] = Field(default_factory=list)
    resets: list[EpisodeReset] = Field(default_factory=list, description="later resets (the first is `reset`)")
    observations: list[EpisodeObservation] = Field(
        default_factory=list, description="observations taken outside a step"
    )
    restores: list[EpisodeRestore] = Field(default_factory=list)


# -- the plan (`codebox episode run FILE`) ---------------------------------------------------------
class ObservationSpec(Contract):
    """What to observe. Fields beyond ``type`` apply to one type each (docs/episodes.md, "Observations")."""

    type: ObservationType
    paths: list[str] = Field(default_factory=list, description="files: absolute sandbox paths")
    sections: list[StateSection] | None = Field(None, min_length=1, description="wordpress-state: the sections")
    redaction: Literal["safe", "none"] = Field("safe", description="wordpress-state")
    includeContent: bool = Field(False, description="wordpress-state: post content in `posts`")
    optionNames: list[str] = Field(default_factory=list, description="wordpress-state: option name globs")
    path: str | None = Field(None, description="http-response: the request path, e.g. /?p=1")
    method: Literal["GET", "HEAD"] = Field("GET", description="http-response")
    args: list[str] = Field(default_factory=list, description="browser-result: wordpress.browser-probe arguments")
    step: int | None = Field(None, ge=0, description="command-result: the step index (default: the last step)")
    limit: int = Field(200, ge=1, le=5000, description="runtime-events: the last N events")
    maxBytes: int = Field(16384, ge=1, le=1048576, description="runtime-logs: bytes kept from each log's end")

    @model_validator(mode="after")
    def _fields_for_type(self) -> ObservationSpec:
        if self.type == "files":
            if not self.paths:
                raise ValueError("a files observation needs paths (absolute sandbox paths)")
            for path in self.paths:
                if not path.startswith("/") or "\x00" in path:
                    raise ValueError(f"paths: {path!r} must be an absolute sandbox path")
        if self.type == "http-response" and (self.path is None or not self.path.startswith("/")):
            raise ValueError("an http-response observation needs path, starting with '/' (e.g. /?p=1)")
        return self


class ActionSpec(Contract):
    """A catalog command to run as one step (``kind`` browser for the browser commands)."""

    kind: Literal["command", "browser"] = "command"
    command: str = Field(min_length=1, description="a catalog command id (`codebox commands`)")
    args: list[str] = Field(default_factory=list, description="key=value arguments")
    timeoutMs: int | None = Field(None, ge=1)
    description: str | None = Field(None, min_length=1)
    metadata: dict[str, Any] | None = None


class SnapshotSpec(Contract):
    name: str | None = Field(
        None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$", description="a name later restores can use"
    )
    args: list[str] = Field(
        default_factory=list,
        description="scope arguments, e.g. snapshot-exclude-wp-content=themes (docs/site-state.md)",
    )


class RestoreSpec(Contract):
    snapshot: str = Field(min_length=1, description="the name or id of a snapshot taken earlier in the episode")


class EpisodePlanItem(Contract):
    """One item of a plan: an ``action`` (with an optional ``observe``), or one of ``observe``, ``snapshot``,
    ``restore``, ``reset``."""

    action: ActionSpec | None = None
    observe: ObservationSpec | None = None
    snapshot: SnapshotSpec | None = None
    restore: RestoreSpec | None = None
    reset: Literal[True] | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> EpisodePlanItem:
        kinds = [name for name in ("action", "snapshot", "restore", "reset") if getattr(self, name) is not None]
        if self.observe is not None and not kinds:
            kinds = ["observe"]
        if len(kinds) != 1:
            raise ValueError(
                "an item is exactly one of action (optionally with observe), observe, snapshot, restore "
                f"or reset; got {', '.join(kinds) or 'none'}"
            )
        if self.observe is not None and kinds[0] not in ("action", "observe"):
            raise ValueError(f"observe goes with an action or alone, not with {kinds[0]}")
        return self

    @property
    def kind(self) -> str:
        for name in ("action", "snapshot", "restore", "reset"):
            if getattr(self, name) is not None:
                return name
        return "observe"


def _default_reset_observations() -> list[ObservationSpec]:
    return [ObservationSpec(type="runtime-info"), ObservationSpec(type="mounts")]


class EpisodePlan(Contract):
    """``codebox episode run FILE``: a sandbox and the items to run in it, in order."""

    schema_: Literal["codebox/episode-plan/v1"] = Field(EPISODE_PLAN_SCHEMA, alias="schema")
    wp: str = DEFAULT_WP_VERSION
    php: str | None = Field(None, description="default: the backend's (8.3 on playground, the host's PHP on native)")
    mounts: list[str] = Field(
        default_factory=list, description="HOST:SANDBOX[:readonly|readwrite|live]; HOST relative to the plan file"
    )
    policy: RuntimePolicy | None = Field(None, description="default: allow exactly the commands the plan runs")
    restore: str | None = Field(
        None,
        description="a snapshot document (files/runtime-snapshots/<id>.json of a "
        "bundle) to restore before the reset observations",
    )
    resetObservations: list[ObservationSpec] = Field(default_factory=_default_reset_observations)
    items: list[EpisodePlanItem] = Field(min_length=1)
    continueOnFailure: bool = Field(False, description="run later items after a step that failed")


class EpisodeStepSummary(Contract):
    index: int
    command: str
    exitCode: int
    observation: str | None = None


class EpisodeRunOutput(Contract):
    """What ``codebox episode run --json`` prints."""

    schema_: Literal["codebox/episode-result/v1"] = Field(EPISODE_RESULT_SCHEMA, alias="schema")
    success: bool
    status: Literal["completed", "failed", "cancelled"]
    episodeId: str
    runtime: dict[str, Any]
    steps: list[EpisodeStepSummary] = Field(default_factory=list)
    snapshots: list[str] = Field(default_factory=list, description="snapshot document paths in the bundle")
    trace: str | None = Field(None, description="the trace's path in the bundle")
    artifacts: dict[str, Any] = Field(default_factory=dict)
    error: dict[str, Any] | None = None
    timings: dict[str, float] = Field(default_factory=dict)
