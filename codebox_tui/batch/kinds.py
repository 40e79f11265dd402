"""Item kinds of a batch: each one says how a batch line becomes a request (on the caller, where its
inputs are read and packed to ship) and how a worker runs that request — always through the one run
lifecycle (``evaluate_patch``, ``run_recipe``, ``run_agent_task``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from codebox_tui.agents import AgentTaskRequest, agent_task_request_from_json, run_agent_task
from codebox_tui.batch.model import COMMON_FIELDS, BatchItem, ItemArgs, check_common, validation_message
from codebox_tui.batch.transfer import pack_dir, unpack
from codebox_tui.errors import BadInputError
from codebox_tui.lifecycle import ProgressListener, RunControl
from codebox_tui.recipes.evaluate_patch import check_bench_paths, evaluate_patch
from codebox_tui.recipes.run import run_recipe
from codebox_tui.recipes.validate import local_sources, validate_recipe_file
from codebox_tui.runtime.backends import WIRE_BACKENDS
from codebox_tui.runtime.wordpress_builds import resolve_build
from codebox_tui.versions import DEFAULT_WP_VERSION


@dataclass
class KindResult:
    """What a worker's run of one item left: the bundle folder (None when nothing was captured), the run's
    id, whether its verdict is positive, the verdict's word and a small JSON summary."""

    success: bool
    verdict: str
    bundle_dir: Path | None
    runtime_id: str | None
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ItemKind:
    """``parse(args, base_dir, where) -> (request, label)`` runs on the caller; ``run(request, work, progress,
    control) -> KindResult`` on a worker, with ``work`` a private scratch folder of that worker."""

    name: str
    parse: Callable[[dict[str, Any], Path, str], tuple[Any, str]]
    run: Callable[[Any, Path, ProgressListener, RunControl], KindResult]


# -- evaluate-patch ---------------------------------------------------------------------------------------
class EvaluatePatchArgs(ItemArgs):
    plugin: str
    patch: str
    tests: list[str] = []
    wp: str = DEFAULT_WP_VERSION
    php: str | None = None  # the backend's default (DEFAULT_PHP_VERSION on playground, the host's on native)
    backend: Literal["playground", "native"] | None = None  # None: CODEBOX_BACKEND (docs/backends.md)
    url: str = "/"
    env: dict[str, str] = {}
    wordpress: str = "auto"
    phpunit_xml: str | None = None
    filter: str | None = None
    bootstrap: str | None = None
    bench: list[str] = []  # paths timed before and after the patch (docs/bench.md)
    bench_count: int = 5


@dataclass
class EvaluatePatchRequest:
    args: EvaluatePatchArgs
    slug: str
    plugin_tar: bytes
    patch_name: str
    patch_bytes: bytes


def _parse_evaluate_patch(obj: dict[str, Any], base_dir: Path, where: str) -> tuple[Any, str]:
    try:
        args = EvaluatePatchArgs.model_validate(obj)
    except ValidationError as error:
        raise validation_message(error, where) from None
    plugin = (base_dir / args.plugin).resolve()
    patch = (base_dir / args.patch).resolve()
    if not plugin.is_dir():
        raise BadInputError(
            f"{where}, field 'plugin': {args.plugin!r} is not a folder", code="invalid-batch-item", field="plugin"
        )
    if not patch.is_file():
        raise BadInputError(
            f"{where}, field 'patch': {args.patch!r} is not a file", code="invalid-batch-item", field="patch"
        )
    if args.wordpress not in ("auto", "tests-lib", "global", "none"):
        raise BadInputError(
            f"{where}, field 'wordpress': expected auto, tests-lib, global or none",
            code="invalid-batch-item",
            field="wordpress",
        )
    try:
        resolve_build(args.wp)
    except BadInputError as error:
        raise BadInputError(f"{where}, field 'wp': {error.message}", code="invalid-batch-item", field="wp") from None
    try:
        check_bench_paths(args.bench, args.bench_count)
    except BadInputError as error:
        field = "bench_count" if error.field == "--bench-count" else "bench"
        raise BadInputError(
            f"{where}, field '{field}': {error.message}", code="invalid-batch-item", field=field
        ) from None
    request = EvaluatePatchRequest(
        args.model_copy(update={"plugin": str(plugin), "patch": str(patch)}),
        plugin.name,
        pack_dir(plugin, exclude=(".git",), what="plugin folder"),
        patch.name,
        patch.read_bytes(),
    )
    stem = patch.name.removesuffix(".patch").removesuffix(".diff")
    return request, f"{plugin.name} + {stem.removeprefix(plugin.name).lstrip('-_. ') or stem}"


def _run_evaluate_patch(
    request: EvaluatePatchRequest, work: Path, progress: ProgressListener, control: RunControl
) -> KindResult:
    inputs = work / "in"
    inputs.mkdir()
    plugin = unpack(request.plugin_tar, inputs / request.slug)
    patch = inputs / request.patch_name
    patch.write_bytes(request.patch_bytes)
    a = request.args
    out = evaluate_patch(
        plugin,
        patch,
        artifacts_dir=work / "artifacts",
        tests=list(a.tests) or None,
        probe_url=a.url,
        wp=a.wp,
        php=a.php,
        backend=a.backend,
        phpunit_xml=a.phpunit_xml,
        test_filter=a.filter,
        env=dict(a.env),
        bootstrap=a.bootstrap,
        wordpress_mode=a.wordpress,
        bench_paths=list(a.bench) or None,
        bench_count=a.bench_count,
        progress=progress,
    )
    tests = out.get("tests") or {}
    summary = {
        "applied": out.get("applied"),
        "verdict": tests.get("verdict"),
        "reason": tests.get("reason"),
        **{k: tests.get(k) for k in ("fixed", "broken", "stillFailing", "before", "after")},
        "frontEnd": ((out.get("probe") or {}).get("frontEnd") or {}).get("status"),
    }
    bundle = Path(out["bundleDir"]) if out.get("bundleId") else None
    return KindResult(
        bool(out.get("success")), str(tests.get("verdict") or "unknown"), bundle, Path(out["runDir"]).name, summary
    )


# -- recipe-run -------------------------------------------------------------------------------------------
class RecipeRunArgs(ItemArgs):
    recipe: str
    root: str | None = None  # the folder shipped with the recipe (default: the recipe's own folder)


@dataclass
class RecipeRunRequest:
    recipe_rel: str
    root_tar: bytes
    # the batch's `--backend`, for a recipe that names no runtime.backend of its own (None: CODEBOX_BACKEND)
    default_backend: str | None = None


def _parse_recipe_run(obj: dict[str, Any], base_dir: Path, where: str) -> tuple[Any, str]:
    try:
        args = RecipeRunArgs.model_validate(obj)
    except ValidationError as error:
        raise validation_message(error, where) from None
    recipe = (base_dir / args.recipe).resolve()
    if not recipe.is_file():
        raise BadInputError(
            f"{where}, field 'recipe': {args.recipe!r} is not a file", code="invalid-batch-item", field="recipe"
        )
    validation = validate_recipe_file(recipe)
    if not validation.valid or validation.recipe is None:
        first = validation.issues[0]
        raise BadInputError(
            f"{where}, field 'recipe': invalid recipe ({len(validation.issues)} problems; first: "
            f"{first.path}: {first.message})",
            code="invalid-batch-item",
            field="recipe",
        )
    sources = local_sources(validation.recipe, recipe.parent)
    root = (base_dir / args.root).resolve() if args.root else _shipped_root(recipe, sources, where)
    if not recipe.is_relative_to(root):
        raise BadInputError(
            f"{where}, field 'root': the recipe {args.recipe!r} is not inside {root}",
            code="invalid-batch-item",
            field="root",
        )
    for json_path, source in sources:
        if not source.is_relative_to(root):
            raise BadInputError(
                f"{where}, field 'root': the recipe's {json_path} ({source}) is outside {root}, the "
                "folder shipped with it; set 'root' to a folder holding the recipe and every file "
                "it names",
                code="invalid-batch-item",
                field="root",
            )
    request = RecipeRunRequest(
        recipe.relative_to(root).as_posix(), pack_dir(root, exclude=(".git",), what="recipe folder")
    )
    return request, recipe.stem


def _shipped_root(recipe: Path, sources: list[tuple[str, Path]], where: str) -> Path:
    """The folder a recipe item ships by default: the smallest one holding the recipe and every file it names
    (``../plugins-for-recipes/…`` beside a recipe folder included), never the file system's root."""
    root = Path(os.path.commonpath([recipe.parent, *(path for _, path in sources)]))
    if root == Path(root.anchor):
        raise BadInputError(
            f"{where}, field 'root': the recipe and the files it names share no folder below "
            f"{root}; set 'root' to the folder to ship",
            code="invalid-batch-item",
            field="root",
        )
    return root


def _run_recipe_run(
    request: RecipeRunRequest, work: Path, progress: ProgressListener, control: RunControl
) -> KindResult:
    root = unpack(request.root_tar, work / "in")
    recipe = root / request.recipe_rel
    validation = validate_recipe_file(recipe)
    own = WIRE_BACKENDS.get((validation.recipe.runtime.backend or "") if validation.recipe is not None else "")
    out = run_recipe(
        validation,
        recipe.parent,
        artifacts_dir=work / "artifacts",
        progress=progress,
        control=control,
        backend=None if own is not None else request.default_backend,
    )
    summary = {k: out.get(k) for k in ("status", "failures", "warnings")}
    bundle = Path(out["bundleDir"]) if out.get("bundleId") else None
    return KindResult(
        bool(out.get("success")),
        str(out.get("status") or "unknown"),
        bundle,
        str(out.get("runtimeId") or "") or None,
        summary,
    )


# -- agent-task (docs/agent-tasks.md) ------------------------------------------------------------------------
@dataclass
class AgentTaskShipment:
    """An agent task as shipped to a worker: the request and each workspace folder packed, so every candidate
    of a fan-out starts from the same bytes the caller had, on any worker. The agent program itself is run by
    its path (docs/scale-out.md, "What is shipped where")."""

    request: AgentTaskRequest
    workspaces: list[bytes]


def ship_agent_task(request: AgentTaskRequest) -> AgentTaskShipment:
    """The request with its workspace folders packed (``.git`` left out, as in the sandbox's copy)."""
    return AgentTaskShipment(
        request,
        [pack_dir(Path(ws.source), exclude=(".git",), what=f"workspace {ws.target}") for ws in request.workspaces],
    )


def _parse_agent_task(obj: dict[str, Any], base_dir: Path, where: str) -> tuple[Any, str]:
    try:
        request = agent_task_request_from_json(obj, base_dir=base_dir)
    except BadInputError as error:
        raise BadInputError(f"{where}: {error.message}", code=error.code, field=error.field) from None
    return ship_agent_task(request), request.task.goal[:60] or "agent task"


def agent_fan_out(request: AgentTaskRequest, count: int) -> list[BatchItem]:
    """``count`` candidates of one agent task (``codebox agent-task --fan-out N``), ids ``candidate-1`` …
    ``candidate-N``, each run in its own sandbox from the same packed workspaces."""
    if not 1 <= count <= 64:
        raise BadInputError("--fan-out must be between 1 and 64", code="invalid-arg", field="--fan-out")
    shipment = ship_agent_task(request)
    label = request.task.goal[:60] or "agent task"
    source = {"kind": "agent-task", "task": request.task.goal[:500], "agent": request.agent.label()}
    return [
        BatchItem(
            f"candidate-{n}",
            "agent-task",
            shipment,
            label,
            sandbox_session_id=request.sandbox_session_id,
            source=source,
        )
        for n in range(1, count + 1)
    ]


def _run_agent_task(
    shipment: AgentTaskShipment, work: Path, progress: ProgressListener, control: RunControl
) -> KindResult:
    workspaces = [
        ws.model_copy(update={"source": unpack(data, work / f"workspace-{n}")})
        for n, (ws, data) in enumerate(zip(shipment.request.workspaces, shipment.workspaces, strict=True))
    ]
    request = shipment.request.model_copy(update={"workspaces": workspaces, "artifacts_root": work / "artifacts"})
    outcome = run_agent_task(request, progress=progress, control=control)
    completion = outcome.completion_outcome
    summary: dict[str, Any] = {"status": outcome.status}
    if completion is not None:
        summary["completion"] = completion.model_dump(mode="json", by_alias=True, exclude_none=True)
    return KindResult(outcome.exit_code == 0, outcome.status, outcome.bundle_dir, outcome.run.runtime_id, summary)


KINDS: dict[str, ItemKind] = {
    "evaluate-patch": ItemKind("evaluate-patch", _parse_evaluate_patch, _run_evaluate_patch),
    "recipe-run": ItemKind("recipe-run", _parse_recipe_run, _run_recipe_run),
    "agent-task": ItemKind("agent-task", _parse_agent_task, _run_agent_task),
}


def get_kind(name: str) -> ItemKind:
    try:
        return KINDS[name]
    except KeyError:
        raise BadInputError(
            f"unknown batch item kind {name!r}; expected one of {', '.join(KINDS)}",
            code="unknown-batch-kind",
            field="kind",
        ) from None


# The kinds whose items name their backend in a ``backend`` field (a recipe-run item's recipe names its own in
# ``runtime.backend``).
BACKEND_FIELD_KINDS = ("evaluate-patch", "agent-task")


def item_from_json(
    obj: dict[str, Any], *, base_dir: Path, where: str, default_id: str, default_backend: str | None = None
) -> BatchItem:
    """One batch line (already a JSON object) → a :class:`BatchItem`, with errors naming ``where`` and the field.
    ``default_backend`` (``codebox batch --backend``): the backend of an item that names none of its own."""
    kind_name = obj.get("kind")
    if not isinstance(kind_name, str):
        raise BadInputError(
            f"{where}, field 'kind': required; expected one of {', '.join(KINDS)}",
            code="invalid-batch-item",
            field="kind",
        )
    if kind_name not in KINDS:
        raise BadInputError(
            f"{where}, field 'kind': unknown kind {kind_name!r}; expected one of {', '.join(KINDS)}",
            code="unknown-batch-kind",
            field="kind",
        )
    item_id, session = check_common(obj, where, default_id)
    args = {k: v for k, v in obj.items() if k not in COMMON_FIELDS}
    if kind_name == "agent-task" and session is not None:
        args["sandbox_session_id"] = session  # echoed in the task's session envelope (docs/agent-tasks.md)
    if default_backend is not None and kind_name in BACKEND_FIELD_KINDS and args.get("backend") is None:
        args["backend"] = default_backend
    request, label = KINDS[kind_name].parse(args, base_dir, where)
    if default_backend is not None and isinstance(request, RecipeRunRequest):
        request.default_backend = default_backend
    return BatchItem(item_id, kind_name, request, label, sandbox_session_id=session, source=dict(obj))


def fan_out_items(obj: dict[str, Any], count: int, *, base_dir: Path, where: str = "task") -> list[BatchItem]:
    """``count`` candidates of one item (``codebox agent-task --fan-out N``; run them with
    ``run_batch(items, kind="fan-out")``): the same request, ids ``candidate-1`` … ``candidate-N``."""
    if not 1 <= count <= 64:
        raise BadInputError("--fan-out must be between 1 and 64", code="invalid-arg", field="--fan-out")
    first = item_from_json({**obj, "id": "candidate-1"}, base_dir=base_dir, where=where, default_id="candidate-1")
    return [
        first,
        *(
            BatchItem(
                f"candidate-{n}",
                first.kind,
                first.request,
                first.label,
                sandbox_session_id=first.sandbox_session_id,
                source=dict(obj),
            )
            for n in range(2, count + 1)
        ),
    ]
