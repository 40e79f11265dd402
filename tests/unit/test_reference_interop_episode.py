"""Runtime episode traces (spec §10, digests §1.7): a trace whose envelopes or refs no longer match their digests
is invalid, as in the reference's trace validator. Codebox used to check only the outline (schema, version,
arrays, step index), so an edited execution, action, observation or snapshot still verified."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from typing import Any

import pytest

from codebox_tui.bundle.verify import episode_trace_issues
from codebox_tui.contracts.canonical import stable_json

DOMAIN = "wp-codebox/runtime-episode-trace/v1\n"


def _digest(value: Any) -> dict[str, str]:
    return {"algorithm": "sha256", "value": hashlib.sha256((DOMAIN + stable_json(value)).encode()).hexdigest()}


def _observation(obs_id: str, type_: str, data: Any) -> dict[str, Any]:
    payload = {
        "schema": "wp-codebox/runtime-episode-observation/v1",
        "type": type_,
        "data": data,
        "observedAt": "2026-11-23T00:00:00.000Z",
        "artifactRefs": [],
    }
    return {**payload, "id": obs_id, "digest": _digest(payload)}


def _trace() -> dict[str, Any]:
    runtime = {
        "id": "runtime-1",
        "backend": "wordpress-playground",
        "environment": {"kind": "wordpress"},
        "createdAt": "2026-11-23T00:00:00.000Z",
        "status": "created",
    }
    reset_obs = [_observation("runtime-1:reset:0:observation:0", "runtime-info", {"id": "runtime-1"})]
    execution = {
        "id": "command-1",
        "command": "wordpress.run-php",
        "args": ["code=echo 1;"],
        "exitCode": 0,
        "stdout": "1",
        "stderr": "",
        "startedAt": "t",
        "finishedAt": "t",
    }
    action_payload = {
        "schema": "wp-codebox/runtime-episode-action/v1",
        "kind": "command",
        "command": "wordpress.run-php",
        "args": ["code=echo 1;"],
        "timeoutMs": 30000,
    }
    action = {**action_payload, "id": "command-1:step:0:action", "digest": _digest(action_payload)}
    step_obs = _observation("command-1:step:0:observation", "files", {"changed": 1})
    snapshot_payload = {
        "schema": "wp-codebox/runtime-episode-snapshot/v1",
        "id": "snapshot-1",
        "createdAt": "t",
        "semantics": "metadata-only",
        "metadata": {},
        "artifactRefs": [],
    }
    return {
        "schema": "wp-codebox/runtime-episode-trace/v1",
        "version": 1,
        "id": "episode-1",
        "createdAt": "t",
        "runtime": runtime,
        "reset": {
            "id": "runtime-1:reset:0",
            "runtime": runtime,
            "observations": reset_obs,
            "observationRefs": [{"kind": "observation", "id": reset_obs[0]["id"], "digest": reset_obs[0]["digest"]}],
        },
        "steps": [
            {
                "id": "command-1:step:0",
                "index": 0,
                "action": action,
                "actionRef": {"kind": "action", "id": action["id"], "digest": action["digest"]},
                "execution": execution,
                "executionRef": {"kind": "execution", "id": "command-1", "digest": _digest(execution)},
                "observation": step_obs,
                "observationRef": {"kind": "observation", "id": step_obs["id"], "digest": step_obs["digest"]},
            }
        ],
        "snapshots": [{**snapshot_payload, "digest": _digest(snapshot_payload)}],
    }


def test_action_digest_vector() -> None:
    """Spec §1.7 by hand: the action payload's stableJson, domain-prefixed, hashed."""
    text = DOMAIN + '{"args":[],"command":"x","kind":"command","schema":"wp-codebox/runtime-episode-action/v1"}'
    action = {
        "schema": "wp-codebox/runtime-episode-action/v1",
        "id": "a",
        "kind": "command",
        "command": "x",
        "args": [],
        "digest": {"algorithm": "sha256", "value": hashlib.sha256(text.encode()).hexdigest()},
    }
    trace = _trace()
    trace["steps"][0]["action"] = action
    trace["steps"][0]["actionRef"] = {"kind": "action", "id": "a", "digest": action["digest"]}
    assert episode_trace_issues(trace) == []


def test_a_recorded_trace_is_valid() -> None:
    assert episode_trace_issues(_trace()) == []


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(trace: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = trace
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return apply


def _delete(path: str) -> Callable[[dict[str, Any]], None]:
    def apply(trace: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = trace
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        del node[last]

    return apply


TAMPERS = {
    "execution edited after recording": _set("steps.0.execution.stdout", "2"),
    "action edited after recording": _set("steps.0.action.args", ["code=echo 2;"]),
    "action timeout added": _set("steps.0.action.timeoutMs", 1),
    "step observation edited": _set("steps.0.observation.data", {"changed": 2}),
    "reset observation edited": _set("reset.observations.0.data", {"id": "other"}),
    "snapshot metadata edited": _set("snapshots.0.metadata", {"x": 1}),
    "snapshot semantics removed": _delete("snapshots.0.semantics"),
    "actionRef of the wrong kind": _set("steps.0.actionRef.kind", "execution"),
    "executionRef without a digest": _delete("steps.0.executionRef.digest"),
    "observationRef to another digest": _set(
        "steps.0.observationRef.digest", {"algorithm": "sha256", "value": "0" * 64}
    ),
    "reset observationRef id empty": _set("reset.observationRefs.0.id", ""),
    "observation of the wrong schema": _set("steps.0.observation.schema", "x"),
    "empty observation object": _set("steps.0.observation", {}),
    "runtime without an id": _set("runtime", {"backend": "wordpress-playground"}),
    "reset without an id": _delete("reset.id"),
    "step id empty": _set("steps.0.id", ""),
    "step index true": _set("steps.0.index", True),
    "version true": _set("version", True),
    "empty trace id": _set("id", ""),
    "action kind unknown": _set("steps.0.action.kind", "shell"),
    "action cwd null": _set("steps.0.action.cwd", None),
    "observationRefs missing": _delete("reset.observationRefs"),
}


@pytest.mark.parametrize("tamper", TAMPERS.values(), ids=TAMPERS.keys())
def test_a_trace_edited_after_recording_is_invalid(tamper: Callable[[dict[str, Any]], None]) -> None:
    trace = copy.deepcopy(_trace())
    tamper(trace)
    assert episode_trace_issues(trace) != []


def test_a_falsy_step_observation_is_skipped_like_javascript() -> None:
    """``observation: null`` (or any falsy value) means "no observation" there, so it is not an issue."""
    trace = _trace()
    del trace["steps"][0]["observationRef"]
    trace["steps"][0]["observation"] = None
    assert episode_trace_issues(trace) == []


def test_a_one_element_kind_array_reads_as_its_string_like_javascript() -> None:
    """The kind check compares ``${kind}``: ``["command"]`` passes it (the digest then covers the array)."""
    trace = _trace()
    action = trace["steps"][0]["action"]
    action["kind"] = ["command"]
    payload = {k: action[k] for k in ("schema", "kind", "command", "args", "timeoutMs")}
    action["digest"] = trace["steps"][0]["actionRef"]["digest"] = _digest(payload)
    assert episode_trace_issues(trace) == []
