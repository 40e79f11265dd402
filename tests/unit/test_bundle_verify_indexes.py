"""Verifier rules 13-15 (spec §2): the runtime replay index, typed-artifacts indexes and tool-call transcripts.

Every bundle here starts as a real capture (``capture_bundle`` over a real folder), then gets the index file
added and listed, and is re-sealed the way the writer must do it (§1.4): new listing → new Mode A digest and
id → rewrite every file that embeds the id → re-hash → manifest self-hash last. The valid variants pass;
each tampered variant is re-sealed too, so only the tampering itself can be the reason for a violation.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codebox_tui.bundle.digests import file_sha256
from codebox_tui.bundle.verify import verify_bundle
from codebox_tui.contracts.canonical import domain_digest
from tests.factories.replay_index import (
    REFERENCE,
    REFERENCE_SCHEMA,
    REPLAY,
    REPLAY_FILES,
    copy_bundle,
    dump_json,
    file_ref,
    read_json,
    replay_index,
    reseal,
    sha_ref,
    with_replay_index,
)

TYPED = "files/typed-artifacts/index.json"
TYPED_ITEM = "files/typed-artifacts/summary-1.json"
TOOLS = "files/runtime-evidence/tool-calls/transcript.json"
TOOL_INPUT = "files/runtime-evidence/tool-calls/input-1.json"


def _codes(bundle: Path) -> list[str]:
    return sorted(v.code for v in verify_bundle(bundle).violations)


# --- rule 13: runtime replay index -------------------------------------------------------------------------


def test_replay_index_with_listed_hash_matching_refs_is_valid(captured: Path, tmp_path: Path) -> None:
    bundle = with_replay_index(copy_bundle(captured, tmp_path))
    result = verify_bundle(bundle)
    assert result.valid, [v.model_dump() for v in result.violations]
    assert read_json(bundle / REPLAY)["references"]["runtimeReferenceManifest"]["path"] == REFERENCE


def test_replay_index_accepts_the_bundle_digest_as_a_plain_string(captured: Path, tmp_path: Path) -> None:
    """Codebox's own writer records ``artifactBundle.digest`` as the hex value; the reference as a digest object."""

    def plain(index: dict[str, Any]) -> None:
        index["artifactBundle"]["digest"] = index["artifactBundle"]["digest"]["value"]

    assert _codes(with_replay_index(copy_bundle(captured, tmp_path), plain, seal_after_tamper=False)) == []


def test_replay_index_reference_to_an_unlisted_file(captured: Path, tmp_path: Path) -> None:
    def unlisted(index: dict[str, Any]) -> None:
        index["references"]["trace"] = {**index["references"]["patch"], "path": "files/runtime-episode-trace.json"}

    bundle = with_replay_index(copy_bundle(captured, tmp_path), unlisted, seal_after_tamper=False)
    violations = verify_bundle(bundle).violations
    assert [(v.code, v.path) for v in violations] == [("malformed-reference", f"{REPLAY}:references.trace.path")]


def test_replay_index_reference_with_a_wrong_hash(captured: Path, tmp_path: Path) -> None:
    def wrong(index: dict[str, Any]) -> None:
        index["references"]["patch"]["sha256"] = sha_ref("e" * 64)

    bundle = with_replay_index(copy_bundle(captured, tmp_path), wrong, seal_after_tamper=False)
    assert [(v.code, v.path) for v in verify_bundle(bundle).violations] == [
        ("file-hash-mismatch", f"{REPLAY}:references.patch.sha256")
    ]


def test_replay_index_reference_without_a_hash(captured: Path, tmp_path: Path) -> None:
    def no_hash(index: dict[str, Any]) -> None:
        del index["references"]["patch"]["sha256"]

    assert _codes(with_replay_index(copy_bundle(captured, tmp_path), no_hash, seal_after_tamper=False)) == [
        "missing-file-hash"
    ]


@pytest.mark.parametrize("where", ["observations", "snapshots"])
def test_replay_index_artifact_refs_must_match_their_files(captured: Path, tmp_path: Path, where: str) -> None:
    def wrong(index: dict[str, Any]) -> None:
        index[where][0]["artifactRefs"][0]["digest"] = sha_ref("f" * 64)

    bundle = with_replay_index(copy_bundle(captured, tmp_path), wrong, seal_after_tamper=False)
    assert [(v.code, v.path) for v in verify_bundle(bundle).violations] == [
        ("file-hash-mismatch", f"{REPLAY}:{where}[0].artifactRefs[0].digest")
    ]


def test_replay_index_artifact_ref_to_an_unlisted_file(captured: Path, tmp_path: Path) -> None:
    def unlisted(index: dict[str, Any]) -> None:
        index["observations"][0]["artifactRefs"][0]["path"] = "files/observations/other.json"

    assert _codes(with_replay_index(copy_bundle(captured, tmp_path), unlisted, seal_after_tamper=False)) == [
        "malformed-reference"
    ]


def test_replay_index_artifact_ref_escaping_the_bundle(captured: Path, tmp_path: Path) -> None:
    def escape(index: dict[str, Any]) -> None:
        index["snapshots"][0]["artifactRefs"][0]["path"] = "../outside.json"

    assert _codes(with_replay_index(copy_bundle(captured, tmp_path), escape, seal_after_tamper=False)) == [
        "invalid-path"
    ]


def test_replay_index_with_a_wrong_digest(captured: Path, tmp_path: Path) -> None:
    def wrong(index: dict[str, Any]) -> None:
        index["digest"] = sha_ref("0" * 64)

    bundle = with_replay_index(copy_bundle(captured, tmp_path), wrong)
    assert [(v.code, v.path) for v in verify_bundle(bundle).violations] == [("digest-mismatch", f"{REPLAY}:digest")]


def test_replay_index_edited_after_sealing_breaks_its_digest(captured: Path, tmp_path: Path) -> None:
    def edit(index: dict[str, Any]) -> None:
        index["replay"]["status"] = "partial"

    assert _codes(with_replay_index(copy_bundle(captured, tmp_path), edit)) == ["digest-mismatch"]


def test_replay_index_with_a_wrong_id(captured: Path, tmp_path: Path) -> None:
    def wrong(index: dict[str, Any]) -> None:
        index["id"] = "runtime-replay-reference-index-sha256-" + "1" * 64

    bundle = with_replay_index(copy_bundle(captured, tmp_path), wrong)
    assert [(v.code, v.path) for v in verify_bundle(bundle).violations] == [("bundle-id-mismatch", f"{REPLAY}:id")]


@pytest.mark.parametrize("field", ["id", "digest"])
def test_replay_index_naming_another_bundle(captured: Path, tmp_path: Path, field: str) -> None:
    def other(index: dict[str, Any]) -> None:
        if field == "id":
            index["artifactBundle"]["id"] = "artifact-bundle-sha256-" + "2" * 64
        else:
            index["artifactBundle"]["digest"] = sha_ref("2" * 64)

    bundle = with_replay_index(copy_bundle(captured, tmp_path), other, seal_after_tamper=False)
    assert [(v.code, v.path) for v in verify_bundle(bundle).violations] == [
        ("review-evidence-mismatch", f"{REPLAY}:artifactBundle")
    ]


@pytest.mark.parametrize("raw", ["{not json", "[]", "null", ""])
def test_unreadable_replay_index_fails_closed(captured: Path, tmp_path: Path, raw: str) -> None:
    assert _codes(with_replay_index(copy_bundle(captured, tmp_path), raw=raw)) == ["malformed-reference"]


@pytest.mark.parametrize(
    "tamper",
    [
        lambda i: i.update(schema="wp-codebox/runtime-replay-reference-index/v2"),
        lambda i: i.update(version=True),
        lambda i: i.pop("replay"),
        lambda i: i["replay"].update(instructions="read the trace"),
        lambda i: i["references"].update(patch="files/patch.diff"),
        lambda i: i["references"]["patch"].update(path=7),
        lambda i: i.update(actions=[{"index": 0}]),
        lambda i: i["observations"][0].update(artifactRefs=[{"path": "x"}]),
        lambda i: i["snapshots"][0].update(digest="d" * 64),
        lambda i: i["artifactBundle"].update(kind="bundle"),
        lambda i: i.update(references=[]),
    ],
    ids=[
        "schema",
        "version",
        "replay",
        "instructions",
        "ref-string",
        "ref-path",
        "action",
        "artifact-ref",
        "snapshot-digest",
        "bundle-kind",
        "references-array",
    ],
)
def test_replay_index_with_the_wrong_shape(
    captured: Path, tmp_path: Path, tamper: Callable[[dict[str, Any]], None]
) -> None:
    bundle = with_replay_index(copy_bundle(captured, tmp_path), tamper)
    assert [(v.code, v.path) for v in verify_bundle(bundle).violations] == [("malformed-reference", REPLAY)]


def test_review_evidence_must_list_the_replay_index_it_names(captured: Path, tmp_path: Path) -> None:
    """Rule 10: ``evidence.runtimeReplayReferenceIndex`` must be a listed file (``malformed-reference``, the
    reference verifier's code for an unlisted artifact reference)."""
    bundle = with_replay_index(copy_bundle(captured, tmp_path), review_ref="files/replay-index-elsewhere.json")
    assert [(v.code, v.path) for v in verify_bundle(bundle).violations] == [
        ("malformed-reference", "files/review.json:evidence.runtimeReplayReferenceIndex")
    ]


def test_reference_manifest_snapshot_refs_are_checked_too(captured: Path, tmp_path: Path) -> None:
    """Rule 12 covers snapshot artifactRefs as well as files[]: a wrong snapshot hash is caught."""
    bundle = copy_bundle(captured, tmp_path)

    def build(bundle: Path, bundle_id: str, digest: str) -> None:
        dump_json(
            bundle / "files/runtime-snapshots/snapshot-1.json", {"schema": "wp-codebox/wordpress-runtime-snapshot/v1"}
        )
        reference = read_json(bundle / REFERENCE)
        reference["snapshots"] = [
            {
                "id": "snapshot-1",
                "semantics": "runtime-state-artifact",
                "digest": sha_ref("d" * 64),
                "replay": {"status": "runtime-state-artifact", "limitations": []},
                "artifactRefs": [
                    {
                        "kind": "runtime-snapshot-artifact",
                        "id": "snapshot-1",
                        "path": "files/runtime-snapshots/snapshot-1.json",
                        "digest": sha_ref("9" * 64),
                    }
                ],
            }
        ]
        keys = ("schema", "version", "runtime", "artifactBundle", "files", "snapshots")
        ref_digest = domain_digest(REFERENCE_SCHEMA, {k: reference[k] for k in keys})
        reference["digest"] = sha_ref(ref_digest)
        reference["id"] = "runtime-reference-manifest-sha256-" + ref_digest
        dump_json(bundle / REFERENCE, reference)

    reseal(
        bundle, {"files/runtime-snapshots/snapshot-1.json": ("runtime-snapshot-artifact", "application/json")}, build
    )
    assert [(v.code, v.path) for v in verify_bundle(bundle).violations] == [
        ("file-hash-mismatch", f"{REFERENCE}:snapshots[0].artifactRefs[0].digest")
    ]


# --- rule 14: typed-artifacts index ------------------------------------------------------------------------

SUMMARY_SCHEMA = {
    "type": "object",
    "required": ["title", "score"],
    "properties": {"title": {"type": "string"}, "score": {"type": "integer", "minimum": 0}},
    "additionalProperties": False,
}


def with_typed_index(
    bundle: Path, tamper: Callable[[dict[str, Any]], None] | None = None, *, raw: str | None = None
) -> Path:
    def build(bundle: Path, bundle_id: str, digest: str) -> None:
        dump_json(bundle / TYPED_ITEM, {"title": "Plugin review", "score": 3})
        if raw is not None:
            (bundle / TYPED).write_text(raw, encoding="utf-8")
            return
        index: dict[str, Any] = {
            "schema": "wp-codebox/typed-artifacts-index/v1",
            "direction": "output",
            "artifacts": [
                {
                    "schema": "wp-codebox/typed-artifact/v1",
                    "name": "summary",
                    "type": "review-summary",
                    "payload_schema": SUMMARY_SCHEMA,
                    "payload": {"title": "Plugin review", "score": 3},
                    "metadata": {},
                    "provenance": {"direction": "output", "source": "runtime"},
                    "artifact": {
                        "path": TYPED_ITEM,
                        "kind": "typed-artifact",
                        "contentType": "application/json",
                        "sha256": file_sha256(bundle / TYPED_ITEM),
                    },
                }
            ],
        }
        if tamper:
            tamper(index)
        dump_json(bundle / TYPED, index)

    reseal(
        bundle,
        {TYPED_ITEM: ("typed-artifact", "application/json"), TYPED: ("typed-artifacts-index", "application/json")},
        build,
    )
    return bundle


def test_typed_artifacts_index_is_valid(captured: Path, tmp_path: Path) -> None:
    result = verify_bundle(with_typed_index(copy_bundle(captured, tmp_path)))
    assert result.valid, [v.model_dump() for v in result.violations]


def test_typed_artifact_payload_schema_may_use_the_camel_case_key(captured: Path, tmp_path: Path) -> None:
    def camel(index: dict[str, Any]) -> None:
        item = index["artifacts"][0]
        item["payloadSchema"] = item.pop("payload_schema")
        item["payload"] = {"title": "x"}

    violations = verify_bundle(with_typed_index(copy_bundle(captured, tmp_path), camel)).violations
    assert [(v.code, v.path) for v in violations] == [("payload-schema-violation", f"{TYPED}:artifacts[0].payload")]


def test_typed_artifact_payload_violating_its_schema_reports_every_error(captured: Path, tmp_path: Path) -> None:
    def bad(index: dict[str, Any]) -> None:
        index["artifacts"][0]["payload"] = {"title": 5, "score": -1, "extra": True}

    violations = verify_bundle(with_typed_index(copy_bundle(captured, tmp_path), bad)).violations
    assert [(v.code, v.path) for v in violations] == [("payload-schema-violation", f"{TYPED}:artifacts[0].payload")]
    errors = violations[0].details["errors"]  # type: ignore[index]
    assert len(errors) == 3
    assert any(e.startswith("/title ") for e in errors) and any(e.startswith("/score ") for e in errors)


def test_typed_artifact_with_an_invalid_payload_schema(captured: Path, tmp_path: Path) -> None:
    def bad(index: dict[str, Any]) -> None:
        index["artifacts"][0]["payload_schema"] = {"type": "no-such-type"}

    violations = verify_bundle(with_typed_index(copy_bundle(captured, tmp_path), bad)).violations
    assert [(v.code, v.path) for v in violations] == [
        ("payload-schema-violation", f"{TYPED}:artifacts[0].payload_schema")
    ]


def test_typed_artifact_schema_with_a_remote_ref_fails_closed_offline(captured: Path, tmp_path: Path) -> None:
    def remote(index: dict[str, Any]) -> None:
        index["artifacts"][0]["payload_schema"] = {"$ref": "https://schemas.example.test/summary.json"}

    assert _codes(with_typed_index(copy_bundle(captured, tmp_path), remote)) == ["payload-schema-violation"]


def test_typed_artifact_unknown_keywords_are_ignored_and_named_schemas_skipped(captured: Path, tmp_path: Path) -> None:
    """Non-strict like the reference: unknown keywords do not fail; a schema named by id is not resolvable."""

    def lenient(index: dict[str, Any]) -> None:
        index["artifacts"][0]["payload_schema"] = {**SUMMARY_SCHEMA, "x-codebox-hint": "ignored"}
        second = json.loads(json.dumps(index["artifacts"][0]))
        second["payload_schema"] = "wp-codebox/review-summary/v1"
        second["payload"] = {"anything": "goes"}
        index["artifacts"].append(second)

    assert _codes(with_typed_index(copy_bundle(captured, tmp_path), lenient)) == []


def test_typed_artifact_path_not_listed(captured: Path, tmp_path: Path) -> None:
    def unlisted(index: dict[str, Any]) -> None:
        index["artifacts"][0]["artifact"]["path"] = "files/typed-artifacts/missing.json"

    violations = verify_bundle(with_typed_index(copy_bundle(captured, tmp_path), unlisted)).violations
    assert [(v.code, v.path) for v in violations] == [("malformed-reference", f"{TYPED}:artifacts[0].artifact.path")]


def test_typed_artifact_with_a_wrong_hash(captured: Path, tmp_path: Path) -> None:
    def wrong(index: dict[str, Any]) -> None:
        index["artifacts"][0]["artifact"]["sha256"] = "a" * 64

    violations = verify_bundle(with_typed_index(copy_bundle(captured, tmp_path), wrong)).violations
    assert [(v.code, v.path) for v in violations] == [("file-hash-mismatch", f"{TYPED}:artifacts[0].artifact.sha256")]


@pytest.mark.parametrize(
    "tamper",
    [
        lambda i: i.update(schema="wp-codebox/structured-artifacts-index/v1"),
        lambda i: i.update(artifacts={}),
    ],
    ids=["schema", "artifacts-object"],
)
def test_typed_index_with_the_wrong_shape(
    captured: Path, tmp_path: Path, tamper: Callable[[dict[str, Any]], None]
) -> None:
    violations = verify_bundle(with_typed_index(copy_bundle(captured, tmp_path), tamper)).violations
    assert [(v.code, v.path) for v in violations] == [("malformed-reference", TYPED)]


def test_typed_index_entry_without_an_artifact_path(captured: Path, tmp_path: Path) -> None:
    def no_path(index: dict[str, Any]) -> None:
        del index["artifacts"][0]["artifact"]["path"]
        index["artifacts"].append("not an object")

    violations = verify_bundle(with_typed_index(copy_bundle(captured, tmp_path), no_path)).violations
    assert [(v.code, v.path) for v in violations] == [
        ("malformed-reference", f"{TYPED}:artifacts[0]"),
        ("malformed-reference", f"{TYPED}:artifacts[1]"),
    ]


@pytest.mark.parametrize("raw", ['{"schema": ', '"wp-codebox/typed-artifacts-index/v1"'])
def test_unreadable_typed_index_fails_closed(captured: Path, tmp_path: Path, raw: str) -> None:
    assert _codes(with_typed_index(copy_bundle(captured, tmp_path), raw=raw)) == ["malformed-reference"]


# --- rule 15: tool-call transcript -------------------------------------------------------------------------


def with_transcript(
    bundle: Path, tamper: Callable[[dict[str, Any]], None] | None = None, *, raw: str | None = None
) -> Path:
    def build(bundle: Path, bundle_id: str, digest: str) -> None:
        dump_json(bundle / TOOL_INPUT, {"command": "wp plugin list"})
        if raw is not None:
            (bundle / TOOLS).write_text(raw, encoding="utf-8")
            return
        transcript: dict[str, Any] = {
            "schema": "wp-codebox/tool-call-transcript/v1",
            "redaction": {"policy": "required", "sensitive": False},
            "tool_calls": [
                {
                    "call_id": "call-1",
                    "tool_name": "wordpress.wp-cli",
                    "tool_type": "runtime-command",
                    "phase": "execution",
                    "status": "succeeded",
                    "started_at": "2026-11-23T10:00:00.000Z",
                    "input_artifacts": [
                        {
                            "path": TOOL_INPUT,
                            "kind": "tool-input",
                            "contentType": "application/json",
                            "sha256": sha_ref(file_sha256(bundle / TOOL_INPUT)),
                        }
                    ],
                    "output_artifacts": [file_ref(bundle, "files/patch.diff")],
                    "redaction": {"policy": "required"},
                }
            ],
        }
        if tamper:
            tamper(transcript)
        dump_json(bundle / TOOLS, transcript)

    reseal(
        bundle,
        {TOOL_INPUT: ("tool-input", "application/json"), TOOLS: ("tool-call-transcript", "application/json")},
        build,
    )
    return bundle


def test_tool_call_transcript_is_valid(captured: Path, tmp_path: Path) -> None:
    result = verify_bundle(with_transcript(copy_bundle(captured, tmp_path)))
    assert result.valid, [v.model_dump() for v in result.violations]


@pytest.mark.parametrize("field", ["call_id", "tool_name", "tool_type", "phase", "status"])
def test_tool_call_missing_a_required_field(captured: Path, tmp_path: Path, field: str) -> None:
    def drop(transcript: dict[str, Any]) -> None:
        del transcript["tool_calls"][0][field]

    violations = verify_bundle(with_transcript(copy_bundle(captured, tmp_path), drop)).violations
    assert [(v.code, v.path) for v in violations] == [("malformed-reference", f"{TOOLS}:tool_calls[0]")]
    assert violations[0].details == {"missing": [field]}


def test_tool_call_without_a_redaction_policy(captured: Path, tmp_path: Path) -> None:
    def drop(transcript: dict[str, Any]) -> None:
        transcript["tool_calls"][0]["redaction"] = {"sensitive": True}
        transcript["tool_calls"][0]["status"] = 0

    violations = verify_bundle(with_transcript(copy_bundle(captured, tmp_path), drop)).violations
    assert [(v.code, v.details) for v in violations] == [
        ("malformed-reference", {"missing": ["status", "redaction.policy"]})
    ]


@pytest.mark.parametrize("key", ["input_artifacts", "output_artifacts"])
def test_tool_call_artifact_not_listed(captured: Path, tmp_path: Path, key: str) -> None:
    def unlisted(transcript: dict[str, Any]) -> None:
        transcript["tool_calls"][0][key][0]["path"] = "files/runtime-evidence/tool-calls/unlisted.json"

    violations = verify_bundle(with_transcript(copy_bundle(captured, tmp_path), unlisted)).violations
    assert [(v.code, v.path) for v in violations] == [("malformed-reference", f"{TOOLS}:tool_calls[0].{key}[0].path")]


@pytest.mark.parametrize("key", ["input_artifacts", "output_artifacts"])
def test_tool_call_artifact_with_a_wrong_hash(captured: Path, tmp_path: Path, key: str) -> None:
    def wrong(transcript: dict[str, Any]) -> None:
        transcript["tool_calls"][0][key][0]["sha256"] = sha_ref("3" * 64)

    violations = verify_bundle(with_transcript(copy_bundle(captured, tmp_path), wrong)).violations
    assert [(v.code, v.path) for v in violations] == [("file-hash-mismatch", f"{TOOLS}:tool_calls[0].{key}[0].sha256")]


def test_tool_call_artifact_hash_that_is_not_a_digest(captured: Path, tmp_path: Path) -> None:
    def bad(transcript: dict[str, Any]) -> None:
        transcript["tool_calls"][0]["input_artifacts"][0]["sha256"] = "not-a-digest"

    assert _codes(with_transcript(copy_bundle(captured, tmp_path), bad)) == ["missing-file-hash"]


@pytest.mark.parametrize(
    "tamper",
    [
        lambda t: t.update(schema="wp-codebox/agent-transcript/v1"),
        lambda t: t.pop("redaction"),
        lambda t: t.update(redaction={"policy": None}),
        lambda t: t.update(tool_calls={"call-1": {}}),
    ],
    ids=["schema", "no-redaction", "policy-null", "calls-object"],
)
def test_tool_call_transcript_with_the_wrong_shape(
    captured: Path, tmp_path: Path, tamper: Callable[[dict[str, Any]], None]
) -> None:
    violations = verify_bundle(with_transcript(copy_bundle(captured, tmp_path), tamper)).violations
    assert [(v.code, v.path) for v in violations] == [("malformed-reference", TOOLS)]


def test_tool_call_with_artifacts_that_are_not_refs(captured: Path, tmp_path: Path) -> None:
    def bad(transcript: dict[str, Any]) -> None:
        transcript["tool_calls"][0]["input_artifacts"] = "files/patch.diff"
        transcript["tool_calls"][0]["output_artifacts"] = [{"kind": "patch"}]
        transcript["tool_calls"].append(["not", "a", "call"])

    violations = verify_bundle(with_transcript(copy_bundle(captured, tmp_path), bad)).violations
    assert [(v.code, v.path) for v in violations] == [
        ("malformed-reference", f"{TOOLS}:tool_calls[0].input_artifacts"),
        ("malformed-reference", f"{TOOLS}:tool_calls[0].output_artifacts[0]"),
        ("malformed-reference", f"{TOOLS}:tool_calls[1]"),
    ]


@pytest.mark.parametrize("raw", ['{"schema": "wp-codebox/tool-call-transcript/v1",', "\xff\xfe"])
def test_unreadable_tool_call_transcript_fails_closed(captured: Path, tmp_path: Path, raw: str) -> None:
    assert _codes(with_transcript(copy_bundle(captured, tmp_path), raw=raw)) == ["malformed-reference"]


def test_cli_reports_index_violations_as_json(captured: Path, tmp_path: Path) -> None:
    """Through the real command line: exit 1 and the violation in ``--json`` output, no traceback."""
    import subprocess
    import sys

    def wrong(index: dict[str, Any]) -> None:
        index["artifacts"][0]["payload"] = {"title": "x", "score": "high"}

    bundle = with_typed_index(copy_bundle(captured, tmp_path), wrong)
    run = subprocess.run(
        [sys.executable, "-m", "codebox_tui", "artifacts", "verify", str(bundle), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stderr
    assert "Traceback" not in run.stderr
    report = json.loads(run.stdout)
    assert [v["code"] for v in report["violations"]] == ["payload-schema-violation"]


# --- fail closed on anything: mutated documents never raise ------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=6,
)


# A mutation is drawn up front, independent of the document it is applied to: the choices are plain
# integers and flags, applied deterministically (index modulo the keys there are). Drawing while walking the
# document made Hypothesis' draws depend on the document's shape (FlakyStrategyDefinition when it differed).
MUTATIONS = st.tuples(
    st.lists(st.tuples(st.integers(0, 2**16), st.booleans()), min_size=1, max_size=6),  # (key choice, descend)
    st.booleans(),  # delete the node (in an object) instead of replacing it
    JSON_VALUES,  # the replacement
)


def _mutator(mutation: tuple[list[tuple[int, bool]], bool, Any]) -> Callable[[dict[str, Any]], None]:
    """Replace or delete one node (at any depth) of a document with arbitrary JSON, as ``mutation`` says."""
    steps, delete, replacement = mutation

    def mutate(doc: dict[str, Any]) -> None:
        node: Any = doc
        for index, (choice, descend) in enumerate(steps):
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            if not keys:
                return
            key = keys[choice % len(keys)]
            child = node[key]
            if descend and isinstance(child, dict | list) and child and index < len(steps) - 1:
                node = child
                continue
            if isinstance(node, dict) and delete:
                del node[key]
            else:
                node[key] = copy.deepcopy(replacement)
            return

    return mutate


def with_review(bundle: Path, tamper: Callable[[dict[str, Any]], None]) -> Path:
    def build(bundle: Path, bundle_id: str, digest: str) -> None:
        review = read_json(bundle / "files/review.json")
        tamper(review)
        dump_json(bundle / "files/review.json", review)

    reseal(bundle, {}, build)
    return bundle


def _with_document(document: str, bundle: Path, tamper: Callable[[dict[str, Any]], None]) -> Path:
    """Add (or, for the review, rewrite) the named document, passing it through ``tamper`` before it is written."""
    if document == "replay":
        return with_replay_index(bundle, tamper, seal_after_tamper=False)
    if document == "typed":
        return with_typed_index(bundle, tamper)
    if document == "tools":
        return with_transcript(bundle, tamper)
    return with_review(bundle, tamper)


FUZZED_DOCUMENTS = ("replay", "typed", "tools", "review")


@pytest.fixture(scope="module")
def pristine_documents(captured: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Each fuzzed document as its builder writes it, built once: every example mutates a copy of the same one,
    so what an example does depends only on Hypothesis' draws (never on a document rebuilt per example)."""
    documents: dict[str, dict[str, Any]] = {}
    for document in FUZZED_DOCUMENTS:

        def keep(doc: dict[str, Any], name: str = document) -> None:
            documents[name] = copy.deepcopy(doc)

        _with_document(document, copy_bundle(captured, tmp_path_factory.mktemp("pristine")), keep)
    return documents


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutation=MUTATIONS, document=st.sampled_from(FUZZED_DOCUMENTS))
def test_mutated_documents_give_violations_never_exceptions(
    captured: Path,
    tmp_path_factory: pytest.TempPathFactory,
    pristine_documents: dict[str, dict[str, Any]],
    mutation: Any,
    document: str,
) -> None:
    mutated = copy.deepcopy(pristine_documents[document])
    _mutator(mutation)(mutated)

    def write_mutated(doc: dict[str, Any]) -> None:
        doc.clear()
        doc.update(mutated)

    bundle = _with_document(document, copy_bundle(captured, tmp_path_factory.mktemp("fuzz")), write_mutated)
    result = verify_bundle(bundle)  # must not raise, whatever the document holds
    assert result.valid == (not result.violations)


DEEP = "[" * 200_000 + "]" * 200_000


@pytest.mark.parametrize(
    "builder", [with_replay_index, with_typed_index, with_transcript], ids=["replay", "typed", "tools"]
)
def test_absurdly_deep_documents_fail_closed(captured: Path, tmp_path: Path, builder: Any) -> None:
    assert _codes(builder(copy_bundle(captured, tmp_path), raw=DEEP)) == ["malformed-reference"]


def test_absurdly_deep_manifest_fails_closed(captured: Path, tmp_path: Path) -> None:
    bundle = copy_bundle(captured, tmp_path)
    (bundle / "manifest.json").write_text(DEEP, encoding="utf-8")
    assert _codes(bundle) == ["malformed-manifest"]


@pytest.mark.parametrize(
    "claimed, codes",
    [
        (5, []),
        ([{"path": ["not", "a", "path"], "status": "added"}], ["review-evidence-mismatch"]),
        ([{"path": {"nested": 1}, "status": None}], ["review-evidence-mismatch"]),
    ],
    ids=["number", "list-path", "object-path"],
)
def test_review_changed_files_of_any_shape_never_raise(
    captured: Path, tmp_path: Path, claimed: Any, codes: list[str]
) -> None:
    bundle = with_review(copy_bundle(captured, tmp_path), lambda review: review.update(changedFiles=claimed))
    assert _codes(bundle) == codes


def test_index_ref_to_a_symlink_is_never_followed_outside(captured: Path, tmp_path: Path) -> None:
    """A listed symlink is reported by the topology rule, and the index's hash of it is not taken through it."""
    bundle = copy_bundle(captured, tmp_path)
    outside = tmp_path / "outside.json"
    outside.write_text('{"secret": "outside the bundle"}\n')

    def build(bundle: Path, bundle_id: str, digest: str) -> None:
        dump_json(bundle / "files/observations/observation-1-wordpress-state-summary.json", {"section": "summary"})
        shot = bundle / "files/runtime-snapshots/snapshot-1.json"
        shot.parent.mkdir(parents=True, exist_ok=True)
        shot.symlink_to(outside)
        dump_json(bundle / REPLAY, replay_index(bundle, bundle_id, digest))  # records the outside file's hash

    reseal(bundle, REPLAY_FILES, build)
    violations = verify_bundle(bundle).violations
    assert sorted((v.code, v.path) for v in violations) == [
        ("file-hash-mismatch", f"{REPLAY}:snapshots[0].artifactRefs[0].digest"),
        ("missing-file", f"manifest.files[{_listed_at(bundle, 'files/runtime-snapshots/snapshot-1.json')}]"),
    ]


def _listed_at(bundle: Path, path: str) -> int:
    return [f["path"] for f in read_json(bundle / "manifest.json")["files"]].index(path)
