"""Registry of schema id → pydantic model, and JSON Schema generation from the models.

The models are the one definition of each wire format; the files under
``codebox_tui/contracts/schemas/`` are generated from them (``python -m
codebox_tui.contracts.schemas --write``) and a unit test checks that they match. To add a model,
add one line to :data:`REGISTRY`, run ``--write`` and commit the generated file.

The artifact manifest carries no ``schema`` field on the wire; it is registered under the
Codebox name ``wp-codebox/artifact-manifest/v1`` so that it can be generated and validated too.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel

from codebox_tui.contracts.agent import (
    AGENT_MESSAGE_SCHEMA,
    AGENT_RESULT_SCHEMA,
    COMPLETION_OUTCOME_SCHEMA,
    HOST_TOOL_RESULT_SCHEMA,
    SANDBOX_SESSION_SCHEMA,
    SANDBOX_TOOL_POLICY_SCHEMA,
    TASK_INPUT_SCHEMA,
    TOOL_BRIDGE_SCHEMA,
    TRANSCRIPT_SCHEMA,
    AgentMessage,
    AgentResult,
    AgentTranscript,
    CompletionOutcome,
    HostToolResult,
    SandboxSession,
    SandboxToolPolicy,
    TaskInput,
    ToolBridge,
)
from codebox_tui.contracts.apply import APPLY_RESULT_SCHEMA, DECISION_SCHEMA, ApplyResult, Decision
from codebox_tui.contracts.bench import BENCH_SCHEMA, BenchDocument
from codebox_tui.contracts.bundle import (
    CHANGED_FILES_SCHEMA,
    DIAGNOSTICS_SCHEMA,
    REFERENCE_MANIFEST_SCHEMA,
    REPLAY_INDEX_SCHEMA,
    REVIEW_SCHEMA,
    TEST_RESULTS_SCHEMA,
    VERIFICATION_SCHEMA,
    WORKSPACE_PATCH_SCHEMA,
    BundleVerification,
    ChangedFiles,
    Diagnostics,
    Manifest,
    Review,
    RuntimeReferenceManifest,
    RuntimeReplayIndex,
    TestResults,
    WorkspacePatch,
)
from codebox_tui.contracts.episode import EPISODE_PLAN_SCHEMA, EPISODE_TRACE_SCHEMA, EpisodePlan, EpisodeTrace
from codebox_tui.contracts.evaluation import PATCH_EVALUATION_SCHEMA, PatchEvaluation
from codebox_tui.contracts.exec import EXEC_RESULT_SCHEMA, ExecResult
from codebox_tui.contracts.feedback import FEEDBACK_SCHEMA, ReviewFeedback
from codebox_tui.contracts.recipe import RECIPE_SCHEMA, WorkspaceRecipe
from codebox_tui.contracts.runtime import CATALOG_SCHEMA, POLICY_SCHEMA, CommandCatalog, RuntimePolicy
from codebox_tui.contracts.site import (
    CONTAINED_SITE_SCHEMA,
    CONTAINED_SITE_STATUS_SCHEMA,
    ContainedSite,
    ContainedSiteStatus,
)
from codebox_tui.contracts.site_state import (
    CHECKPOINT_RESULT_SCHEMA,
    RUNTIME_SNAPSHOT_SCHEMA,
    SITE_STATE_DIFF_SCHEMA,
    SITE_STATE_SUMMARY_SCHEMA,
    STATE_EXPORT_SCHEMA,
    STATE_SECTION_SCHEMA,
    CheckpointResult,
    RuntimeSnapshot,
    SiteStateDiff,
    SiteStateSummary,
    StateExport,
    StateSectionDocument,
)

MANIFEST_SCHEMA: Final = "wp-codebox/artifact-manifest/v1"
JSON_SCHEMA_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_DIR: Final = Path(__file__).with_name("schemas")

REGISTRY: dict[str, type[BaseModel]] = {
    MANIFEST_SCHEMA: Manifest,
    CHANGED_FILES_SCHEMA: ChangedFiles,
    REVIEW_SCHEMA: Review,
    TEST_RESULTS_SCHEMA: TestResults,
    DIAGNOSTICS_SCHEMA: Diagnostics,
    WORKSPACE_PATCH_SCHEMA: WorkspacePatch,
    REFERENCE_MANIFEST_SCHEMA: RuntimeReferenceManifest,
    REPLAY_INDEX_SCHEMA: RuntimeReplayIndex,
    VERIFICATION_SCHEMA: BundleVerification,
    APPLY_RESULT_SCHEMA: ApplyResult,
    DECISION_SCHEMA: Decision,
    RECIPE_SCHEMA: WorkspaceRecipe,
    POLICY_SCHEMA: RuntimePolicy,
    CATALOG_SCHEMA: CommandCatalog,
    SITE_STATE_SUMMARY_SCHEMA: SiteStateSummary,
    SITE_STATE_DIFF_SCHEMA: SiteStateDiff,
    STATE_EXPORT_SCHEMA: StateExport,
    STATE_SECTION_SCHEMA: StateSectionDocument,
    RUNTIME_SNAPSHOT_SCHEMA: RuntimeSnapshot,
    CHECKPOINT_RESULT_SCHEMA: CheckpointResult,
    EXEC_RESULT_SCHEMA: ExecResult,
    PATCH_EVALUATION_SCHEMA: PatchEvaluation,
    EPISODE_TRACE_SCHEMA: EpisodeTrace,
    EPISODE_PLAN_SCHEMA: EpisodePlan,
    FEEDBACK_SCHEMA: ReviewFeedback,
    TASK_INPUT_SCHEMA: TaskInput,
    SANDBOX_SESSION_SCHEMA: SandboxSession,
    COMPLETION_OUTCOME_SCHEMA: CompletionOutcome,
    AGENT_RESULT_SCHEMA: AgentResult,
    TRANSCRIPT_SCHEMA: AgentTranscript,
    HOST_TOOL_RESULT_SCHEMA: HostToolResult,
    SANDBOX_TOOL_POLICY_SCHEMA: SandboxToolPolicy,
    TOOL_BRIDGE_SCHEMA: ToolBridge,
    AGENT_MESSAGE_SCHEMA: AgentMessage,
    BENCH_SCHEMA: BenchDocument,
    CONTAINED_SITE_SCHEMA: ContainedSite,
    CONTAINED_SITE_STATUS_SCHEMA: ContainedSiteStatus,
}


class UnknownSchemaError(KeyError):
    """Raised for a schema id that is not in the registry."""


def schema_names() -> list[str]:
    """All registered schema ids, sorted."""
    return sorted(REGISTRY)


def model_for(schema_id: str) -> type[BaseModel]:
    try:
        return REGISTRY[schema_id]
    except KeyError:
        known = ", ".join(schema_names())
        raise UnknownSchemaError(f"unknown schema id {schema_id!r}; expected one of {known}") from None


def generate_json_schema(schema_id: str) -> dict[str, Any]:
    """The Draft 2020-12 JSON Schema generated from the model registered under ``schema_id``."""
    schema = model_for(schema_id).model_json_schema(by_alias=True, mode="validation")
    schema["$schema"] = JSON_SCHEMA_DIALECT
    schema["$id"] = schema_id
    return schema


json_schema_for = generate_json_schema


def schema_file_name(schema_id: str) -> str:
    """``wp-codebox/changed-files/v1`` → ``changed-files.v1.json``."""
    parts = schema_id.split("/")
    return f"{parts[-2]}.{parts[-1]}.json"


def render(schema_id: str) -> str:
    return json.dumps(generate_json_schema(schema_id), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_all(directory: Path = SCHEMA_DIR) -> list[Path]:
    """Write every registered schema; remove generated files that no longer have a model."""
    directory.mkdir(parents=True, exist_ok=True)
    wanted = {schema_file_name(s): s for s in schema_names()}
    for stale in directory.glob("*.json"):
        if stale.name not in wanted:
            stale.unlink()
    written = []
    for name, schema_id in sorted(wanted.items()):
        path = directory / name
        path.write_text(render(schema_id), encoding="utf-8")
        written.append(path)
    return written


def stale_files(directory: Path = SCHEMA_DIR) -> list[str]:
    """Names of generated files that are missing, differ from the models, or are left over."""
    wanted = {schema_file_name(s): s for s in schema_names()}
    problems = [
        name
        for name, sid in sorted(wanted.items())
        if not (directory / name).is_file() or (directory / name).read_text(encoding="utf-8") != render(sid)
    ]
    problems += sorted(p.name for p in directory.glob("*.json") if p.name not in wanted)
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codebox_tui.contracts.schemas")
    parser.add_argument("--write", action="store_true", help="write codebox_tui/contracts/schemas/*.json")
    parser.add_argument("--check", action="store_true", help="exit 1 when the written files differ from the models")
    parser.add_argument("schema_id", nargs="?", help="print one schema")
    args = parser.parse_args(argv)
    if args.write:
        for path in write_all():
            print(path)
        return 0
    if args.check:
        stale = stale_files()
        for name in stale:
            print(f"stale: {name}", file=sys.stderr)
        return 1 if stale else 0
    if args.schema_id:
        try:
            sys.stdout.write(render(args.schema_id))
        except UnknownSchemaError as exc:
            print(exc.args[0], file=sys.stderr)
            return 2
        return 0
    print("\n".join(schema_names()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
