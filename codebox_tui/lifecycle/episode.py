"""Runtime episodes on the one run lifecycle (docs/episodes.md): ``Episode`` opens a run with
``RunService.open`` and drives its sandbox step by step — ``reset()``, ``step(action)``, ``observe(spec)``,
``snapshot()``, ``restore(snapshot)``, ``collect_artifacts()``, ``trace()``, ``close()`` — recording every
action, execution, observation and snapshot as the reference's envelopes with their domain-separated digests
(spec §1.7). ``close()`` writes ``files/runtime-episode-trace.json`` and ``files/runtime-episode.jsonl`` and
captures, verifies and registers the bundle like every other run.

Progress: each item is an event of the run (``episode.*`` in events.jsonl), so the Live run screen and
``--progress`` show the steps as they happen.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError

from codebox_tui.bundle import layout
from codebox_tui.bundle.safe_read import load_json_file
from codebox_tui.contracts.canonical import pretty_json
from codebox_tui.contracts.common import new_id, utc_now_iso
from codebox_tui.contracts.episode import (
    EPISODE_PLAN_SCHEMA,
    ActionSpec,
    EpisodeAction,
    EpisodeObservation,
    EpisodePlan,
    EpisodeRef,
    EpisodeReset,
    EpisodeRestore,
    EpisodeRunOutput,
    EpisodeSnapshot,
    EpisodeStep,
    EpisodeStepSummary,
    EpisodeTrace,
    ObservationSpec,
    SnapshotSpec,
    episode_digest,
)
from codebox_tui.contracts.runtime import ExecutionResult, RuntimePolicy
from codebox_tui.contracts.site_state import RuntimeSnapshot
from codebox_tui.errors import BadInputError, CodeboxError
from codebox_tui.jsonargs import json_path, resolve_source
from codebox_tui.lifecycle.output import run_artifacts
from codebox_tui.lifecycle.request import CommandStep, RunControl, RunRequest, check_request, mounts_from_text
from codebox_tui.lifecycle.service import OpenRun, ProgressListener, RunOutcome, RunService
from codebox_tui.runtime import site_state
from codebox_tui.runtime.catalog import get_command, parse_args
from codebox_tui.runtime.commands import store_snapshot
from codebox_tui.runtime.observations import observe
from codebox_tui.runtime.site_state import (
    SNAPSHOT_ARGS,
    load_snapshot,
    readonly_content_paths,
    restore_snapshot,
    snapshot_scope,
    take_snapshot,
)

TRACE_KIND: Final = "runtime-episode-trace"
EVENTS_KIND: Final = "runtime-episode-events"
RESET_CHECKPOINT: Final = "codebox-episode-reset"
SNAPSHOT_SEMANTICS: Final = "runtime-state-artifact"


def trace_execution(execution: ExecutionResult) -> dict[str, Any]:
    """The execution object a step records: the ExecutionResult without its parsed ``result.json`` (the same bytes
    are in ``stdout``). A command's own JSON output may use any key, and the trace may not carry evaluation
    vocabulary outside ``data``/``metadata`` (spec §10)."""
    doc = execution.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(doc.get("result"), dict):
        doc["result"].pop("json", None)
    return doc


class Episode:
    """A stateful episode in one sandbox. Use it as a context manager (or call :meth:`close`)::

        with Episode(request) as episode:
            episode.reset()
            episode.step(ActionSpec(command="wordpress.run-php", args=["code=echo 1;"]),
                         ObservationSpec(type="wordpress-state"))
            saved = episode.snapshot()
            episode.restore(saved)
        episode.outcome  # the RunOutcome: bundle, status, inbox key

    A request with ``restore`` set (a snapshot from another bundle) starts from that snapshot: the lifecycle restores
    it right after boot, and the first reset records it. With ``resettable``, the first reset keeps an in-sandbox
    checkpoint that later resets return to (docs/episodes.md, "Reset")."""

    def __init__(
        self,
        request: RunRequest,
        *,
        service: RunService | None = None,
        progress: ProgressListener | None = None,
        control: RunControl | None = None,
        resettable: bool = True,
        on_open: Callable[[OpenRun], None] | None = None,
    ) -> None:
        self.request = request
        self.service = service or RunService()
        self.resettable = resettable
        self._stack = ExitStack()
        self.run: OpenRun = self._stack.enter_context(self.service.open(request, progress=progress, control=control))
        if on_open is not None:  # the run's session exists, nothing booted yet (the Live run screen tails it)
            on_open(self.run)
        self.id = new_id("episode")
        self.created_at = utc_now_iso()
        self._reset: EpisodeReset | None = None
        self._resets: list[EpisodeReset] = []
        self._steps: list[EpisodeStep] = []
        self._executions: list[tuple[int, ExecutionResult]] = []
        self._observations: list[EpisodeObservation] = []
        self._snapshots: list[EpisodeSnapshot] = []
        self._restores: list[EpisodeRestore] = []
        self._saved: dict[str, RuntimeSnapshot] = {}  # snapshot id → the snapshot with its bytes inline
        self._names: dict[str, str] = {}  # snapshot name → id
        self._records: list[dict[str, Any]] = []  # runtime-episode.jsonl
        self._observation_count = 0
        self.outcome: RunOutcome | None = None
        self.last_trace: EpisodeTrace | None = None  # the trace collect_artifacts wrote

    # -- context manager -----------------------------------------------------------------------
    def __enter__(self) -> Episode:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc is not None:
            self.run.status = "failed"
            if isinstance(exc, CodeboxError) and self.run.error is None:
                self.run.error = exc
        self.close()

    @property
    def session(self) -> Any:
        return self.run.session

    def _emit(self, type: str, data: dict[str, Any], level: str = "info") -> None:
        self.session.emit(type, {"episodeId": self.id, **data}, level=level)

    def _record(self, type: str, data: dict[str, Any]) -> None:
        self._records.append({"type": type, "episodeId": self.id, "timestamp": utc_now_iso(), **data})

    # -- reset ---------------------------------------------------------------------------------
    def reset(self, observations: list[ObservationSpec] | None = None) -> EpisodeReset:
        """Boot the sandbox (first call) or return it to the state of the first reset (later calls), then take the
        reset observations (default ``runtime-info`` and ``mounts``)."""
        specs = (
            observations
            if observations is not None
            else [ObservationSpec(type="runtime-info"), ObservationSpec(type="mounts")]
        )
        number = len(self._resets) + (1 if self._reset is not None else 0)
        sandbox = self.run.boot()  # restores ``request.restore`` first, when set
        restored = None
        if self._reset is None:
            if self.run.restored is not None:
                restored = self.request.restore.id
                self._restores.append(
                    EpisodeRestore(
                        id=f"{self.id}:restore:0",
                        snapshotId=restored,
                        restoredAt=utc_now_iso(),
                        afterStep=0,
                        source=self.request.restore_source,
                        stats=self.session.redact.value(self.run.restored.get("stats") or {}),
                    )
                )
            if self.resettable:
                site_state.checkpoint_create(sandbox, RESET_CHECKPOINT, self._scope([]))
        else:
            if not self.resettable:
                raise BadInputError(
                    "this episode was opened with resettable=False: it cannot reset again",
                    code="episode-not-resettable",
                    field="reset",
                )
            site_state.checkpoint_restore(sandbox, RESET_CHECKPOINT)
        runtime_id = self.session.runtime_id
        taken = [
            self._observe(spec, f"{runtime_id}:reset:{number}:observation:{index}") for index, spec in enumerate(specs)
        ]
        reset = EpisodeReset(
            id=f"{runtime_id}:reset:{number}",
            runtime=self._runtime(),
            observations=taken,
            observationRefs=[self._ref("observation", o.id, o.digest.value) for o in taken],
            restoredSnapshot=restored,
        )
        if self._reset is None:
            self._reset = reset
        else:
            self._resets.append(reset)
        self._record("episode.reset", {"id": reset.id, "observationRefs": _dump(reset.observationRefs)})
        self._emit(
            "episode.reset",
            {
                "id": reset.id,
                "observations": [o.type for o in taken],
                "message": f"reset {number}" + (f" from snapshot {restored}" if restored else ""),
            },
        )
        return reset

    def _ensure_reset(self) -> None:
        if self._reset is None:
            self.reset()

    def _runtime(self) -> dict[str, Any]:
        return dict(self.session.runtime_info().model_dump(mode="json", exclude_none=True))

    @staticmethod
    def _ref(kind: str, id: str, digest: str, path: str | None = None) -> EpisodeRef:
        return EpisodeRef.model_validate(
            {"kind": kind, "id": id, "digest": {"value": digest}, **({"path": path} if path else {})}
        )

    # -- steps ---------------------------------------------------------------------------------
    def step(self, action: ActionSpec, observation: ObservationSpec | None = None) -> EpisodeStep:
        """Run one catalog command under the policy and record it (and, if asked, an observation after it). A
        command that fails or is denied is still a step: its execution says so."""
        self._ensure_reset()
        index = len(self._steps)
        payload = EpisodeAction.digest_payload(
            action.kind, action.command, list(action.args), action.description, action.timeoutMs, action.metadata
        )
        envelope = EpisodeAction.model_validate(
            {**payload, "id": f"{self.id}:action:{index}", "digest": episode_digest(payload)}
        )
        self._emit("episode.step-started", {"index": index, "command": action.command, "kind": action.kind})
        recorded = len(self.session.executions)
        timeout = action.timeoutMs / 1000 if action.timeoutMs is not None else None
        try:
            execution = self.run.execute(CommandStep(action.command, list(action.args), timeout))
        except CodeboxError:
            if len(self.session.executions) == recorded:  # bad arguments or no sandbox: nothing ran
                raise
            execution = self.session.executions[-1]
        self._executions.append((index, execution))
        executed = trace_execution(execution)
        observed = self._observe(observation, f"{self.id}:step:{index}:observation") if observation else None
        step = EpisodeStep(
            id=f"{execution.id}:step:{index}",
            index=index,
            action=envelope,
            actionRef=self._ref("action", envelope.id, envelope.digest.value),
            execution=executed,
            executionRef=self._ref("execution", execution.id, episode_digest(executed).value),
            observation=observed,
            observationRef=self._ref("observation", observed.id, observed.digest.value) if observed else None,
        )
        self._steps.append(step)
        self._record(
            "episode.step",
            {
                "id": step.id,
                "index": index,
                "actionRef": _dump(step.actionRef),
                "executionRef": _dump(step.executionRef),
                **({"observationRef": _dump(step.observationRef)} if step.observationRef else {}),
            },
        )
        self._emit(
            "episode.step",
            {
                "index": index,
                "command": action.command,
                "exitCode": execution.exitCode,
                "durationMs": execution.durationMs,
                "message": f"step {index + 1} done" + (f", observed {observed.type}" if observed else ""),
                **({"observation": observed.type} if observed else {}),
            },
            level="info" if execution.exitCode == 0 else "error",
        )
        return step

    # -- observations --------------------------------------------------------------------------
    def observe(self, spec: ObservationSpec) -> EpisodeObservation:
        """Take one observation outside a step (recorded in the trace's ``observations``)."""
        self._ensure_reset()
        self._observation_count += 1
        observation = self._observe(spec, f"{self.id}:observation:{self._observation_count}")
        self._observations.append(observation)
        self._record(
            "episode.observation",
            {
                "id": observation.id,
                "type": observation.type,
                "ref": _dump(self._ref("observation", observation.id, observation.digest.value)),
            },
        )
        return observation

    def _observe(self, spec: ObservationSpec, observation_id: str) -> EpisodeObservation:
        started = time.monotonic()
        observed = observe(self.session, spec, observation_id, executions=self._executions)
        data = self.session.redact.value(observed.data)
        refs = [
            self._ref(kind, f"{observation_id}:{Path(rel).name}", digest, rel).model_dump(
                mode="json", exclude_none=True
            )
            for rel, kind, digest in observed.files
        ]
        observed_at = utc_now_iso()
        payload = EpisodeObservation.digest_payload(spec.type, data, observed_at, refs)
        observation = EpisodeObservation.model_validate(
            {**payload, "id": observation_id, "digest": episode_digest(payload)}
        )
        ms = int((time.monotonic() - started) * 1000)
        self._emit(
            "episode.observation",
            {"id": observation_id, "type": spec.type, "ms": ms, "message": f"observed {spec.type} in {ms} ms"},
        )
        return observation

    # -- snapshots -----------------------------------------------------------------------------
    def _scope(self, args: list[str]) -> dict[str, Any]:
        parsed: dict[str, str] = {}
        for item in args:
            name, sep, value = item.partition("=")
            if not sep or name not in SNAPSHOT_ARGS:
                raise BadInputError(
                    f"snapshot argument {item!r} must be NAME=VALUE with NAME one of {', '.join(SNAPSHOT_ARGS)}",
                    code="invalid-arg",
                    field="snapshot.args",
                )
            parsed[name] = value
        spec = self.session.spec
        return snapshot_scope(parsed, readonly_content_paths([*spec.mounts, *spec.extra_mounts]))

    def snapshot(self, spec: SnapshotSpec | None = None) -> EpisodeSnapshot:
        """Snapshot the site (``wp-codebox/wordpress-runtime-snapshot/v1``) into the bundle under
        ``files/runtime-snapshots/`` and record its envelope (semantics ``runtime-state-artifact``)."""
        spec = spec or SnapshotSpec()
        self._ensure_reset()
        if spec.name is not None and spec.name in self._names:
            raise BadInputError(
                f"a snapshot named {spec.name!r} was already taken in this episode",
                code="duplicate-snapshot-name",
                field="snapshot.name",
            )
        started = time.monotonic()
        taken = take_snapshot(
            self.run.sandbox,
            self._scope(spec.args),
            metadata={
                "runtime": self.session.runtime_id,
                "episode": self.id,
                "mounts": [m.model_dump(mode="json") for m in self.session.spec.mounts],
            },
        )
        rel, file_digest = store_snapshot(self.session, taken)
        metadata = {
            "compatibility": taken.compatibility.model_dump(),
            "hashes": taken.hashes.model_dump(),
            "stats": taken.metadata.get("stats"),
            "afterStep": len(self._steps),
            **({"name": spec.name} if spec.name else {}),
        }
        refs = [self._ref("runtime-snapshot", taken.id, file_digest, rel).model_dump(mode="json", exclude_none=True)]
        payload = EpisodeSnapshot.digest_payload(
            taken.id, taken.createdAt, SNAPSHOT_SEMANTICS, self.session.redact.value(metadata), refs
        )
        envelope = EpisodeSnapshot.model_validate({**payload, "digest": episode_digest(payload)})
        self._snapshots.append(envelope)
        self._saved[taken.id] = taken
        if spec.name:
            self._names[spec.name] = taken.id
        self._record(
            "episode.snapshot",
            {"id": taken.id, "path": rel, "ref": _dump(self._ref("snapshot", taken.id, envelope.digest.value))},
        )
        ms = int((time.monotonic() - started) * 1000)
        self._emit(
            "episode.snapshot",
            {
                "id": taken.id,
                "path": rel,
                "name": spec.name,
                "ms": ms,
                "message": f"snapshot {spec.name or taken.id} in {ms} ms",
            },
        )
        return envelope

    def restore(self, snapshot: EpisodeSnapshot | str) -> EpisodeRestore:
        """Restore a snapshot taken earlier in this episode (its envelope, id or name) into the sandbox."""
        self._ensure_reset()
        key = snapshot.id if isinstance(snapshot, EpisodeSnapshot) else self._names.get(snapshot, snapshot)
        saved = self._saved.get(key)
        if saved is None:
            known = ", ".join([*self._names, *self._saved]) or "none yet"
            raise BadInputError(
                f"no snapshot {key!r} in this episode (known: {known})",
                code="unknown-snapshot",
                field="restore.snapshot",
            )
        envelope = next(s for s in self._snapshots if s.id == key)
        return self._restore_snapshot(saved, envelope=envelope)

    def _restore_snapshot(self, snapshot: RuntimeSnapshot, *, envelope: EpisodeSnapshot) -> EpisodeRestore:
        started = time.monotonic()
        stats = restore_snapshot(self.run.sandbox, snapshot)
        record = EpisodeRestore(
            id=f"{self.id}:restore:{len(self._restores)}",
            snapshotId=snapshot.id,
            restoredAt=utc_now_iso(),
            afterStep=len(self._steps),
            snapshotRef=self._ref("snapshot", envelope.id, envelope.digest.value),
            stats=self.session.redact.value(stats if isinstance(stats, dict) else {}),
        )
        self._restores.append(record)
        self._record("episode.restore", _dump(record))
        ms = int((time.monotonic() - started) * 1000)
        self._emit(
            "episode.restore", {"snapshotId": snapshot.id, "ms": ms, "message": f"restored {snapshot.id} in {ms} ms"}
        )
        return record

    # -- the trace and the bundle ----------------------------------------------------------------
    def trace(self) -> EpisodeTrace:
        """The trace so far (``wp-codebox/runtime-episode-trace/v1``); resets first when nothing has run yet."""
        if self._stack is None:  # closed: the trace it wrote, if it got that far
            if self.last_trace is None:
                raise BadInputError(
                    "this episode is closed and wrote no trace (its sandbox never booted)",
                    code="episode-closed",
                    field="trace",
                )
            return self.last_trace
        self._ensure_reset()
        assert self._reset is not None
        return EpisodeTrace(
            id=self.id,
            createdAt=self.created_at,
            runtime=self._runtime(),
            reset=self._reset,
            steps=list(self._steps),
            snapshots=list(self._snapshots),
            resets=list(self._resets),
            observations=list(self._observations),
            restores=list(self._restores),
        )

    def collect_artifacts(self) -> dict[str, str]:
        """Write ``files/runtime-episode-trace.json`` and ``files/runtime-episode.jsonl`` into the run (listed in the
        bundle at capture); returns their paths. May be called again: the files are rewritten."""
        trace = self.trace()
        self.last_trace = trace
        records = [
            *self._records,
            {
                "type": "episode.artifacts",
                "episodeId": self.id,
                "timestamp": utc_now_iso(),
                "trace": layout.EPISODE_TRACE,
                "steps": len(trace.steps),
                "snapshots": len(trace.snapshots),
            },
        ]
        listed = {e.path for e in self.session.evidence}
        for rel, kind, text in (
            (layout.EPISODE_TRACE, TRACE_KIND, pretty_json(_dump(trace))),
            (
                layout.EPISODE_EVENTS,
                EVENTS_KIND,
                "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in records),
            ),
        ):
            path = (
                self.session.run_dir / rel
                if rel in listed
                else self.session.add_evidence(rel, kind, _content_type(rel))
            )
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self.session.redact(text), encoding="utf-8")
        self._emit(
            "episode.artifacts",
            {
                "trace": layout.EPISODE_TRACE,
                "steps": len(trace.steps),
                "message": f"trace of {len(trace.steps)} step(s) written",
            },
        )
        return {"trace": layout.EPISODE_TRACE, "events": layout.EPISODE_EVENTS}

    def close(self) -> RunOutcome | None:
        """Write the episode's files, capture and verify the bundle, dispose the sandbox, register the run."""
        if self.outcome is not None or self._stack is None:
            return self.outcome
        try:
            if self.session.booted and not self.run.cancelled:
                try:
                    self.collect_artifacts()
                except CodeboxError as error:
                    self.run.status = "failed"
                    self.run.error = self.run.error or error
            if self.request.capture:
                self.run.capture(verify=True)
                if self.run.verification_problem is not None:
                    self.run.status = "failed"
        finally:
            stack, self._stack = self._stack, None  # type: ignore[assignment]
            stack.close()
        self.outcome = self.run.outcome
        return self.outcome


def _dump(value: Any) -> Any:
    if isinstance(value, list):
        return [_dump(item) for item in value]
    return value.model_dump(mode="json", by_alias=True, exclude_none=True)


def _content_type(rel: str) -> str:
    return "application/x-ndjson" if rel.endswith(".jsonl") else "application/json"


# -- plans (`codebox episode run FILE`, docs/episodes.md) ---------------------------------------------
MAX_PLAN_ERRORS: Final = 20
MAX_PLAN_BYTES: Final = 4 * 1024 * 1024


def is_episode_plan(path: Path) -> bool:
    """Whether ``path`` is a JSON document that names itself an episode plan (its ``schema``): how the Launch form
    tells a plan from a recipe. A file that cannot be read as JSON within the plan limits is not one (the recipe
    reader then says what is wrong with it)."""
    try:
        value = load_json_file(path, str(path), limit=MAX_PLAN_BYTES)
    except CodeboxError:
        return False
    return isinstance(value, dict) and value.get("schema") == EPISODE_PLAN_SCHEMA


def load_plan(path: Path) -> EpisodePlan:
    """Read and validate an episode plan (``codebox/episode-plan/v1``); every problem is reported with its JSON path
    (``$.items[2].action.command``) in one BadInputError (``invalid-episode-plan``, ``details.issues``)."""

    raw = load_json_file(path, str(path), limit=MAX_PLAN_BYTES, code="invalid-episode-plan")
    try:
        return EpisodePlan.model_validate(raw)
    except ValidationError as error:
        issues = []
        for item in error.errors()[:MAX_PLAN_ERRORS]:
            message = str(item["msg"]).removeprefix("Value error, ")
            issues.append({"path": json_path(item["loc"]), "message": message})
        lines = "; ".join(f"{issue['path']}: {issue['message']}" for issue in issues)
        raise BadInputError(
            f"{path}: not a valid episode plan (codebox/episode-plan/v1): {lines}",
            code="invalid-episode-plan",
            field=issues[0]["path"],
            details={"issues": issues},
        ) from None


def plan_commands(plan: EpisodePlan) -> list[str]:
    """The catalog commands a plan runs (its default policy allows exactly these)."""
    commands = [item.action.command for item in plan.items if item.action is not None]
    observations = [*plan.resetObservations, *(item.observe for item in plan.items if item.observe is not None)]
    if any(spec.type == "browser-result" for spec in observations):
        commands.append("wordpress.browser-probe")
    return list(dict.fromkeys(commands)) or ["wordpress.run-php"]


def plan_request(
    plan: EpisodePlan,
    plan_dir: Path,
    *,
    artifacts_root: Path | None = None,
    restore: RuntimeSnapshot | None = None,
    restore_source: str | None = None,
    backend: str | None = None,
) -> RunRequest:
    """The run a plan asks for on ``backend`` (None: ``CODEBOX_BACKEND``): its mounts (host paths relative to
    the plan's folder), versions and policy; every action's command and arguments checked before anything boots."""
    texts = []
    for text in plan.mounts:
        host, sep, rest = text.partition(":")
        # HOST relative to the plan's folder, normalised (the mount parser refuses '..' segments)
        texts.append(f"{os.path.normpath(resolve_source(plan_dir, host))}{sep}{rest}" if sep else text)
    commands = plan_commands(plan)
    request = RunRequest(
        mounts=mounts_from_text(texts),
        policy=plan.policy or RuntimePolicy(commands=commands),
        wp=plan.wp,
        php=plan.php,
        backend=backend,
        artifacts_root=artifacts_root,
        tool_commands=commands,
        flow="episode",
        restore=restore,
        restore_source=restore_source,
    )
    for index, item in enumerate(plan.items):
        if item.action is not None:
            try:
                parse_args(get_command(item.action.command), list(item.action.args))
            except BadInputError as error:
                raise BadInputError(
                    f"$.items[{index}].action: {error.message}", code=error.code, field=f"$.items[{index}].action"
                ) from None
    check_request(request)
    return request


def run_plan(
    plan: EpisodePlan,
    plan_dir: Path,
    *,
    artifacts_root: Path | None = None,
    progress: ProgressListener | None = None,
    control: RunControl | None = None,
    restore: str | None = None,
    on_open: Callable[[OpenRun], None] | None = None,
    backend: str | None = None,
) -> tuple[Episode, str]:
    """Run a plan's items in order in one episode; returns the closed episode and ``completed``, ``failed`` or
    ``cancelled`` (a step that exits non-zero stops the plan unless ``continueOnFailure``). ``restore`` (a snapshot
    document's path) overrides the plan's own."""
    source = restore or plan.restore
    snapshot = None
    if source is not None:
        snapshot = load_snapshot_document(Path(source) if Path(source).is_absolute() or restore else plan_dir / source)
    request = plan_request(
        plan, plan_dir, artifacts_root=artifacts_root, restore=snapshot, restore_source=source, backend=backend
    )
    resettable = any(item.reset for item in plan.items)
    status = "completed"
    with Episode(request, progress=progress, control=control, resettable=resettable, on_open=on_open) as episode:
        episode.reset(list(plan.resetObservations))
        for item in plan.items:
            if episode.run.cancelled:
                status = "cancelled"
                break
            if item.action is not None:
                step = episode.step(item.action, item.observe)
                if step.execution.get("exitCode") != 0:
                    status = "failed"
                    if not plan.continueOnFailure:
                        break
            elif item.snapshot is not None:
                episode.snapshot(item.snapshot)
            elif item.restore is not None:
                episode.restore(item.restore.snapshot)
            elif item.reset:
                episode.reset(list(plan.resetObservations))
            elif item.observe is not None:
                episode.observe(item.observe)
        if status != "completed":
            episode.run.status = "failed"
    return episode, status


def episode_run_output(episode: Episode, status: str) -> EpisodeRunOutput:
    """The ``codebox/episode-result/v1`` document of a plan :func:`run_plan` ran (``codebox episode run --json``
    and the MCP ``episode_run`` tool), not yet redacted."""
    outcome = episode.outcome
    assert outcome is not None, "the episode is not closed"
    trace = episode.last_trace
    error = outcome.error
    success = outcome.success and status == "completed"
    shown = "cancelled" if outcome.status == "cancelled" else ("completed" if success else "failed")
    return EpisodeRunOutput(
        success=success,
        status=shown,
        episodeId=episode.id,
        runtime=outcome.runtime.model_dump(mode="json", exclude_none=True),
        steps=[
            EpisodeStepSummary(
                index=s.index,
                command=s.action.command,
                exitCode=int(s.execution.get("exitCode", 1)),
                observation=s.observation.type if s.observation else None,
            )
            for s in (trace.steps if trace else [])
        ],
        snapshots=[ref.path for s in (trace.snapshots if trace else []) for ref in s.artifactRefs if ref.path],
        trace=layout.EPISODE_TRACE if outcome.bundle is not None else None,
        artifacts=run_artifacts(outcome),
        error=error.to_dict() if error is not None else None,
        timings=outcome.timings,
    )


def load_snapshot_document(path: Path) -> RuntimeSnapshot:
    """A snapshot document of a bundle (``files/runtime-snapshots/<id>.json``), its blobs read from the bundle it is
    in (docs/site-state.md, "Snapshots in a bundle"); hostile input, checked before anything boots."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise BadInputError(
            f"snapshot {path} does not exist or is not a file; expected "
            "files/runtime-snapshots/<id>.json inside a bundle",
            code="snapshot-missing",
            field="--restore",
        )
    resolved = path.resolve()
    # <bundle>/files/runtime-snapshots/<id>.json: the blobs are under the bundle's own folder
    bundle_dir = resolved.parent.parent.parent
    rel = resolved.relative_to(bundle_dir).as_posix()
    if rel.rpartition("/")[0] != layout.RUNTIME_SNAPSHOTS_DIR:
        raise BadInputError(
            f"snapshot {path} must be a file under {layout.RUNTIME_SNAPSHOTS_DIR}/ of a bundle",
            code="snapshot-missing",
            field="--restore",
        )
    return load_snapshot(bundle_dir, rel)
