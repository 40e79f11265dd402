"""The runtime episode trace validator (spec §1.6): envelopes, digests and references of every step."""

from __future__ import annotations

from typing import Any

from codebox_tui.bundle.verify.common import Checker, load_json
from codebox_tui.bundle.verify.references import digest_ok
from codebox_tui.contracts.canonical import domain_digest, stable_json

EPISODE_TRACE_SCHEMA = "wp-codebox/runtime-episode-trace/v1"
_EVALUATION_KEYS = frozenset(
    {"reward", "success", "grader", "scenario", "task-set", "task_set", "taskSet", "benchmark"}
    | {"model-eval", "model_eval", "modelEval"}
)


def _freeform(where: str) -> bool:
    """Payloads the trace contract leaves free (as the reference's validator does): the trace's ``artifacts`` and
    every ``data`` and ``metadata`` object, where a command's or a site's own keys may appear."""
    return where == "trace.artifacts" or where.endswith(".data") or where.endswith(".metadata")


def _evaluation_keys(value: Any, where: str, found: list[str]) -> None:
    if _freeform(where):
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if key in _EVALUATION_KEYS:
                found.append(f"{where}.{key}")
            _evaluation_keys(item, f"{where}.{key}", found)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _evaluation_keys(item, f"{where}[{index}]", found)


EPISODE_ACTION_SCHEMA = "wp-codebox/runtime-episode-action/v1"
EPISODE_OBSERVATION_SCHEMA = "wp-codebox/runtime-episode-observation/v1"
EPISODE_SNAPSHOT_SCHEMA = "wp-codebox/runtime-episode-snapshot/v1"
_ACTION_KINDS = ("command", "filesystem", "http", "browser")


def _js_truthy(value: Any) -> bool:
    """JavaScript truthiness of a JSON value (``{}`` and ``[]`` are truthy there)."""
    return not (value is None or value is False or value == "" or (isinstance(value, int | float) and value == 0))


def _js_string(value: Any) -> str:
    """``${value}`` of a JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return stable_json(value)
    if isinstance(value, list):
        return ",".join("" if item is None else _js_string(item) for item in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


def _non_empty(value: Any) -> bool:
    return isinstance(value, str) and value != ""


def _is_js_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _episode_digest(value: Any) -> str:
    """Spec §1.7: ``sha256("wp-codebox/runtime-episode-trace/v1\n" + stableJson(value))``."""
    return domain_digest(EPISODE_TRACE_SCHEMA, value)


def _action_payload(action: dict[str, Any]) -> dict[str, Any]:
    kind = action.get("kind")
    payload: dict[str, Any] = {
        "schema": EPISODE_ACTION_SCHEMA,
        "kind": "command" if kind is None else kind,
        "command": action.get("command"),
        "args": action["args"] if isinstance(action.get("args"), list) else [],
    }
    for key in ("cwd", "method", "url", "path", "operation", "selector", "description"):
        if isinstance(action.get(key), str):
            payload[key] = action[key]
    if _is_js_number(action.get("timeoutMs")):
        payload["timeoutMs"] = action["timeoutMs"]
    if isinstance(action.get("metadata"), dict):
        payload["metadata"] = action["metadata"]
    return payload


def _refs_or_empty(value: Any) -> Any:
    return [] if value is None else value


def _trace_ref_issues(ref: Any, where: str, kind: str | None, issues: list[str]) -> None:
    if not isinstance(ref, dict):
        issues.append(f"{where} must be an object")
        return
    if kind is not None and ref.get("kind") != kind:
        issues.append(f"{where}.kind must be {kind}")
    if not _non_empty(ref.get("kind")):
        issues.append(f"{where}.kind is required")
    if not _non_empty(ref.get("id")):
        issues.append(f"{where}.id is required")
    if not digest_ok(ref.get("digest")):
        issues.append(f"{where}.digest must be a sha256 digest")


def _ref_digest_issue(ref: Any, target: Any, where: str, issues: list[str]) -> None:
    """A ref's digest must equal the digest of the envelope it points at (when both are well formed)."""
    digest: Any = ref.get("digest") if isinstance(ref, dict) else None
    if digest_ok(digest) and digest_ok(target) and digest["value"] != target["value"]:
        issues.append(f"{where}.digest does not match the referenced envelope's digest")


def _artifact_refs_issues(item: dict[str, Any], where: str, issues: list[str]) -> None:
    if "artifactRefs" in item:
        refs = item["artifactRefs"]
        if not isinstance(refs, list):
            issues.append(f"{where}.artifactRefs must be an array when present")
        else:
            for index, ref in enumerate(refs):
                _trace_ref_issues(ref, f"{where}.artifactRefs[{index}]", None, issues)


def _envelope_ok(item: Any, where: str, schema: str, required: tuple[str, ...], issues: list[str]) -> bool:
    """The checks every episode envelope starts with; False when it is not even an object."""
    if not isinstance(item, dict):
        issues.append(f"{where} must be an object")
        return False
    if item.get("schema") != schema:
        issues.append(f"{where}.schema must be {schema}")
    for key in required:
        if not _non_empty(item.get(key)):
            issues.append(f"{where}.{key} is required")
    return True


def _observation_issues(observation: Any, where: str, issues: list[str]) -> None:
    if not _envelope_ok(observation, where, EPISODE_OBSERVATION_SCHEMA, ("id", "type", "observedAt"), issues):
        return
    if "data" not in observation:
        issues.append(f"{where}.data is required")
    _artifact_refs_issues(observation, where, issues)
    _envelope_digest_issues(
        observation, where, EPISODE_OBSERVATION_SCHEMA, ("type", "data", "observedAt"), "observation", issues
    )


def _envelope_digest_issues(
    item: dict[str, Any], where: str, schema: str, keys: tuple[str, ...], what: str, issues: list[str]
) -> None:
    """The envelope's digest must be the episode digest of its canonical payload."""
    if not digest_ok(item.get("digest")):
        issues.append(f"{where}.digest must be a sha256 digest")
        return
    payload = {
        "schema": schema,
        **{key: item.get(key) for key in keys},
        "artifactRefs": _refs_or_empty(item.get("artifactRefs")),
    }
    if item["digest"]["value"] != _episode_digest(payload):
        issues.append(f"{where}.digest does not match the canonical {what} payload")


def _action_issues(action: Any, where: str, issues: list[str]) -> None:
    if not _envelope_ok(action, where, EPISODE_ACTION_SCHEMA, (), issues):
        return
    if _js_string(action.get("kind")) not in _ACTION_KINDS:
        issues.append(f"{where}.kind must be command, filesystem, http or browser")
    if not _non_empty(action.get("command")):
        issues.append(f"{where}.command is required")
    args = action.get("args")
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        issues.append(f"{where}.args must be an array of strings")
    if "cwd" in action and not isinstance(action["cwd"], str):
        issues.append(f"{where}.cwd must be a string when present")
    for key in ("method", "url", "path", "operation", "selector", "description"):
        if key in action and not _non_empty(action[key]):
            issues.append(f"{where}.{key} must be a non-empty string when present")
    if "metadata" in action and not isinstance(action["metadata"], dict):
        issues.append(f"{where}.metadata must be an object when present")
    if "timeoutMs" in action and not (_is_js_number(action["timeoutMs"]) and action["timeoutMs"] >= 0):
        issues.append(f"{where}.timeoutMs must be a non-negative number when present")
    if not digest_ok(action.get("digest")):
        issues.append(f"{where}.digest must be a sha256 digest")
        return
    if action["digest"]["value"] != _episode_digest(_action_payload(action)):
        issues.append(f"{where}.digest does not match the canonical action payload")


def _snapshot_issues(snapshot: Any, where: str, issues: list[str]) -> None:
    if not _envelope_ok(snapshot, where, EPISODE_SNAPSHOT_SCHEMA, ("id", "createdAt", "semantics"), issues):
        return
    if not isinstance(snapshot.get("metadata"), dict):
        issues.append(f"{where}.metadata must be an object")
    _artifact_refs_issues(snapshot, where, issues)
    _envelope_digest_issues(
        snapshot, where, EPISODE_SNAPSHOT_SCHEMA, ("id", "createdAt", "semantics", "metadata"), "snapshot", issues
    )


def _ref_id(value: Any) -> Any:
    return value.get("id") if isinstance(value, dict) else None


def _step_issues(step: Any, index: int, issues: list[str]) -> None:
    where = f"steps[{index}]"
    if not isinstance(step, dict):
        issues.append(f"{where} must be an object")
        return
    if not _non_empty(step.get("id")):
        issues.append(f"{where}.id is required")
    if not (_is_js_number(step.get("index")) and step["index"] == index):
        issues.append(f"{where}.index must equal its position {index}")
    action = step.get("action")
    if not _non_empty(_ref_id(action)):
        issues.append(f"{where}.action.id is required")
    else:
        _action_issues(action, f"{where}.action", issues)
    if not _non_empty(_ref_id(step.get("actionRef"))):
        issues.append(f"{where}.actionRef.id is required")
    else:
        _trace_ref_issues(step["actionRef"], f"{where}.actionRef", "action", issues)
        _ref_digest_issue(
            step["actionRef"], action.get("digest") if isinstance(action, dict) else None, f"{where}.actionRef", issues
        )
    execution = step.get("execution")
    if not _non_empty(_ref_id(execution)):
        issues.append(f"{where}.execution.id is required")
    if not _non_empty(_ref_id(step.get("executionRef"))):
        issues.append(f"{where}.executionRef.id is required")
    else:
        _trace_ref_issues(step["executionRef"], f"{where}.executionRef", "execution", issues)
        target = {"algorithm": "sha256", "value": _episode_digest(execution)} if _js_truthy(execution) else None
        _ref_digest_issue(step["executionRef"], target, f"{where}.executionRef", issues)
    observation = step.get("observation")
    if _js_truthy(observation) and not _non_empty(_ref_id(observation)):
        issues.append(f"{where}.observation.id is required")
    elif _js_truthy(observation):
        _observation_issues(observation, f"{where}.observation", issues)
    if _js_truthy(step.get("observationRef")):
        _trace_ref_issues(step["observationRef"], f"{where}.observationRef", "observation", issues)
        if _js_truthy(observation):
            _ref_digest_issue(
                step["observationRef"],
                observation.get("digest") if isinstance(observation, dict) else None,
                f"{where}.observationRef",
                issues,
            )


def _codebox_extension_issues(doc: dict[str, Any], issues: list[str]) -> None:
    """Codebox's own trace keys (docs/episodes.md): later ``resets``, ``observations`` taken outside a step and
    ``restores``; their envelopes and refs are held to the same rules as the reference's."""
    for key in ("resets", "observations", "restores"):
        if key in doc and not isinstance(doc[key], list):
            issues.append(f"{key} must be an array when present")

    def items(value: Any) -> list[Any]:
        return value if isinstance(value, list) else []

    for index, reset in enumerate(items(doc.get("resets"))):
        where = f"resets[{index}]"
        if not isinstance(reset, dict) or not _non_empty(reset.get("id")):
            issues.append(f"{where}.id is required")
            continue
        observations = reset.get("observations")
        refs = reset.get("observationRefs")
        if not isinstance(observations, list) or not isinstance(refs, list) or len(refs) != len(observations):
            issues.append(f"{where} must have observations and one observationRef each")
            continue
        for at, (observation, ref) in enumerate(zip(observations, refs, strict=True)):
            _observation_issues(observation, f"{where}.observations[{at}]", issues)
            _trace_ref_issues(ref, f"{where}.observationRefs[{at}]", "observation", issues)
            if isinstance(observation, dict):
                _ref_digest_issue(ref, observation.get("digest"), f"{where}.observationRefs[{at}]", issues)
    for index, observation in enumerate(items(doc.get("observations"))):
        _observation_issues(observation, f"observations[{index}]", issues)
    snapshots = {s.get("id"): s.get("digest") for s in items(doc.get("snapshots")) if isinstance(s, dict)}
    for index, restore in enumerate(items(doc.get("restores"))):
        where = f"restores[{index}]"
        if not isinstance(restore, dict) or not _non_empty(restore.get("snapshotId")):
            issues.append(f"{where}.snapshotId is required")
            continue
        ref = restore.get("snapshotRef")
        if ref is not None:
            _trace_ref_issues(ref, f"{where}.snapshotRef", "snapshot", issues)
            if isinstance(ref, dict) and ref.get("id") not in snapshots:
                issues.append(f"{where}.snapshotRef names no snapshot of this trace")
            elif isinstance(ref, dict):
                _ref_digest_issue(ref, snapshots[ref.get("id")], f"{where}.snapshotRef", issues)


def episode_trace_issues(doc: Any) -> list[str]:
    """Problems of a ``wp-codebox/runtime-episode-trace/v1`` document (spec §10, §1.7); empty when valid.

    Beyond the shape, every envelope digest (action, observation, snapshot) is recomputed from its canonical payload
    and every ref digest (actionRef, executionRef, observationRef, reset observationRefs) must equal the digest of
    the envelope it names, as the reference's trace validator requires: a trace edited after it was recorded fails.
    """
    if not isinstance(doc, dict):
        return ["trace is not a JSON object"]
    issues: list[str] = []
    if doc.get("schema") != EPISODE_TRACE_SCHEMA:
        issues.append(f"schema must be {EPISODE_TRACE_SCHEMA!r}, got {doc.get('schema')!r}")
    if not (_is_js_number(doc.get("version")) and doc["version"] == 1):
        issues.append("version must be 1")
    for key in ("id", "createdAt"):
        if not _non_empty(doc.get(key)):
            issues.append(f"{key} must be a non-empty string")
    if not _non_empty(_ref_id(doc.get("runtime"))):
        issues.append("runtime.id is required")
    reset = doc.get("reset")
    if not _non_empty(_ref_id(reset)):
        issues.append("reset.id is required")
    observations = reset.get("observations") if isinstance(reset, dict) else None
    if not isinstance(observations, list):
        issues.append("reset.observations must be an array")
    else:
        for index, observation in enumerate(observations):
            _observation_issues(observation, f"reset.observations[{index}]", issues)
    refs = reset.get("observationRefs") if isinstance(reset, dict) else None
    if not isinstance(refs, list):
        issues.append("reset.observationRefs must be an array")
    else:
        for index, ref in enumerate(refs):
            where = f"reset.observationRefs[{index}]"
            _trace_ref_issues(ref, where, "observation", issues)
            target = observations[index] if isinstance(observations, list) and index < len(observations) else None
            if _js_truthy(target):
                _ref_digest_issue(ref, target.get("digest") if isinstance(target, dict) else None, where, issues)
    steps = doc.get("steps")
    if not isinstance(steps, list):
        issues.append("steps must be an array")
    else:
        for index, step in enumerate(steps):
            _step_issues(step, index, issues)
    snapshots = doc.get("snapshots")
    if not isinstance(snapshots, list):
        issues.append("snapshots must be an array")
    else:
        for index, snapshot in enumerate(snapshots):
            _snapshot_issues(snapshot, f"snapshots[{index}]", issues)
    _codebox_extension_issues(doc, issues)
    found: list[str] = []
    _evaluation_keys(doc, "trace", found)
    issues.extend(f"{where} is evaluation vocabulary, not allowed in a trace" for where in found)
    return issues


def check_episode_trace(check: Checker, path: str) -> None:
    try:
        issues = episode_trace_issues(load_json(check.bundle, path))
    except (RecursionError, TypeError, ValueError) as error:  # fail closed on anything the checks cannot walk
        issues = [f"trace cannot be checked: {type(error).__name__}"]
    if issues:
        check.add(
            "malformed-reference",
            path,
            f"runtime episode trace is invalid: {'; '.join(issues)}",
            file=path,
            details={"issues": issues},
        )
