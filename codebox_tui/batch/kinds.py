"""Item kinds of a batch: each one says how a batch line becomes a request (on the caller, where its
inputs are read and packed to ship) and how a worker runs that request — always through the one run
lifecycle (``evaluate_patch``, ``run_recipe``, ``codebox_tui.agents.run_agent_task``).

``evaluate-patch`` and ``recipe-run`` are built in. ``agent-task`` runs through the ``codebox_tui.agents``
package, imported when such an item is met; without that package the item is a clear error before
anything runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from codebox_tui.batch.model import COMMON_FIELDS, BatchItem, ItemArgs, check_common, validation_message
from codebox_tui.batch.transfer import pack_dir, unpack
from codebox_tui.errors import BadInputError
from codebox_tui.lifecycle import ProgressListener, RunControl
from codebox_tui.versions import DEFAULT_PHP_VERSION, DEFAULT_WP_VERSION


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
    php: str = DEFAULT_PHP_VERSION
    url: str = "/"
    env: dict[str, str] = {}
    wordpress: str = "auto"
    phpunit_xml: str | None = None
    filter: str | None = None
    bootstrap: str | None = None


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
        raise BadInputError(f"{where}, field 'plugin': {args.plugin!r} is not a folder", code="invalid-batch-item",
                            field="plugin")
    if not patch.is_file():
        raise BadInputError(f"{where}, field 'patch': {args.patch!r} is not a file", code="invalid-batch-item",
                            field="patch")
    if args.wordpress not in ("auto", "tests-lib", "global", "none"):
        raise BadInputError(f"{where}, field 'wordpress': expected auto, tests-lib, global or none",
                            code="invalid-batch-item", field="wordpress")
    from codebox_tui.runtime.wordpress_builds import resolve_build

    try:
        resolve_build(args.wp)
    except BadInputError as error:
        raise BadInputError(f"{where}, field 'wp': {error.message}", code="invalid-batch-item", field="wp") from None
    request = EvaluatePatchRequest(args.model_copy(update={"plugin": str(plugin), "patch": str(patch)}), plugin.name,
                                   pack_dir(plugin, exclude=(".git",), what="plugin folder"), patch.name,
                                   patch.read_bytes())
    stem = patch.name.removesuffix(".patch").removesuffix(".diff")
    return request, f"{plugin.name} + {stem.removeprefix(plugin.name).lstrip('-_. ') or stem}"


def _run_evaluate_patch(request: EvaluatePatchRequest, work: Path, progress: ProgressListener,
                        control: RunControl) -> KindResult:
    from codebox_tui.recipes.evaluate_patch import evaluate_patch

    inputs = work / "in"
    inputs.mkdir()
    plugin = unpack(request.plugin_tar, inputs / request.slug)
    patch = inputs / request.patch_name
    patch.write_bytes(request.patch_bytes)
    a = request.args
    out = evaluate_patch(plugin, patch, artifacts_dir=work / "artifacts", tests=list(a.tests) or None,
                         probe_url=a.url, wp=a.wp, php=a.php, phpunit_xml=a.phpunit_xml, test_filter=a.filter,
                         env=dict(a.env), bootstrap=a.bootstrap, wordpress_mode=a.wordpress, progress=progress)
    tests = out.get("tests") or {}
    summary = {"applied": out.get("applied"), "verdict": tests.get("verdict"), "reason": tests.get("reason"),
               **{k: tests.get(k) for k in ("fixed", "broken", "stillFailing", "before", "after")},
               "frontEnd": ((out.get("probe") or {}).get("frontEnd") or {}).get("status")}
    bundle = Path(out["bundleDir"]) if out.get("bundleId") else None
    return KindResult(bool(out.get("success")), str(tests.get("verdict") or "unknown"), bundle,
                      Path(out["runDir"]).name, summary)


# -- recipe-run -------------------------------------------------------------------------------------------
class RecipeRunArgs(ItemArgs):
    recipe: str
    root: str | None = None  # the folder shipped with the recipe (default: the recipe's own folder)


@dataclass
class RecipeRunRequest:
    recipe_rel: str
    root_tar: bytes


def _parse_recipe_run(obj: dict[str, Any], base_dir: Path, where: str) -> tuple[Any, str]:
    from codebox_tui.recipes.validate import validate_recipe_file

    try:
        args = RecipeRunArgs.model_validate(obj)
    except ValidationError as error:
        raise validation_message(error, where) from None
    recipe = (base_dir / args.recipe).resolve()
    if not recipe.is_file():
        raise BadInputError(f"{where}, field 'recipe': {args.recipe!r} is not a file", code="invalid-batch-item",
                            field="recipe")
    root = (base_dir / args.root).resolve() if args.root else recipe.parent
    if not recipe.is_relative_to(root):
        raise BadInputError(f"{where}, field 'root': the recipe {args.recipe!r} is not inside {root}",
                            code="invalid-batch-item", field="root")
    validation = validate_recipe_file(recipe)
    if not validation.valid:
        first = validation.issues[0]
        raise BadInputError(f"{where}, field 'recipe': invalid recipe ({len(validation.issues)} problems; first: "
                            f"{first.path}: {first.message})", code="invalid-batch-item", field="recipe")
    request = RecipeRunRequest(recipe.relative_to(root).as_posix(),
                               pack_dir(root, exclude=(".git",), what="recipe folder"))
    return request, recipe.stem


def _run_recipe_run(request: RecipeRunRequest, work: Path, progress: ProgressListener,
                    control: RunControl) -> KindResult:
    from codebox_tui.recipes.run import run_recipe
    from codebox_tui.recipes.validate import validate_recipe_file

    root = unpack(request.root_tar, work / "in")
    recipe = root / request.recipe_rel
    validation = validate_recipe_file(recipe)
    out = run_recipe(validation, recipe.parent, artifacts_dir=work / "artifacts", progress=progress, control=control)
    summary = {k: out.get(k) for k in ("status", "failures", "warnings")}
    bundle = Path(out["bundleDir"]) if out.get("bundleId") else None
    return KindResult(bool(out.get("success")), str(out.get("status") or "unknown"), bundle,
                      str(out.get("runtimeId") or "") or None, summary)


# -- agent-task (the codebox_tui.agents package) ------------------------------------------------------------
def _agents() -> Any:
    """The agent package, imported when an agent-task item needs it: the batch runner works without it, and
    an agent-task item then fails before anything runs."""
    try:
        import codebox_tui.agents as agents
    except ModuleNotFoundError as error:
        if error.name != "codebox_tui.agents":
            raise
        raise BadInputError("agent-task items need the agent package (codebox_tui.agents), which this Codebox "
                            "does not have", code="unknown-batch-kind", field="kind") from None
    return agents


def _parse_agent_task(obj: dict[str, Any], base_dir: Path, where: str) -> tuple[Any, str]:
    agents = _agents()
    try:
        request = agents.agent_task_request_from_json(obj)
    except BadInputError as error:
        raise BadInputError(f"{where}: {error.message}", code=error.code, field=error.field) from None
    goal = getattr(request, "goal", None) or obj.get("task") or "agent task"
    return request, str(goal)[:60]


def _run_agent_task(request: Any, work: Path, progress: ProgressListener, control: RunControl) -> KindResult:
    agents = _agents()
    if hasattr(request, "artifacts_root"):
        request.artifacts_root = work / "artifacts"
    outcome = agents.run_agent_task(request, progress=progress, control=control)
    bundle_dir = getattr(outcome, "bundle_dir", None)
    status = str(getattr(outcome, "status", "") or "unknown")
    return KindResult(bool(getattr(outcome, "success", status == "succeeded")), status,
                      Path(bundle_dir) if bundle_dir else None, getattr(outcome, "runtime_id", None),
                      {"status": status})


KINDS: dict[str, ItemKind] = {
    "evaluate-patch": ItemKind("evaluate-patch", _parse_evaluate_patch, _run_evaluate_patch),
    "recipe-run": ItemKind("recipe-run", _parse_recipe_run, _run_recipe_run),
    "agent-task": ItemKind("agent-task", _parse_agent_task, _run_agent_task),
}


def get_kind(name: str) -> ItemKind:
    try:
        return KINDS[name]
    except KeyError:
        raise BadInputError(f"unknown batch item kind {name!r}; expected one of {', '.join(KINDS)}",
                            code="unknown-batch-kind", field="kind") from None


def item_from_json(obj: dict[str, Any], *, base_dir: Path, where: str, default_id: str) -> BatchItem:
    """One batch line (already a JSON object) → a :class:`BatchItem`, with errors naming ``where`` and the field."""
    kind_name = obj.get("kind")
    if not isinstance(kind_name, str):
        raise BadInputError(f"{where}, field 'kind': required; expected one of {', '.join(KINDS)}",
                            code="invalid-batch-item", field="kind")
    if kind_name not in KINDS:
        raise BadInputError(f"{where}, field 'kind': unknown kind {kind_name!r}; expected one of {', '.join(KINDS)}",
                            code="unknown-batch-kind", field="kind")
    item_id, session = check_common(obj, where, default_id)
    args = {k: v for k, v in obj.items() if k not in COMMON_FIELDS}
    request, label = KINDS[kind_name].parse(args, base_dir, where)
    return BatchItem(item_id, kind_name, request, label, sandbox_session_id=session, source=dict(obj))


def fan_out_items(obj: dict[str, Any], count: int, *, base_dir: Path, where: str = "task") -> list[BatchItem]:
    """``count`` candidates of one item (``codebox agent-task --fan-out N``; run them with
    ``run_batch(items, kind="fan-out")``): the same request, ids ``candidate-1`` … ``candidate-N``."""
    if not 1 <= count <= 64:
        raise BadInputError("--fan-out must be between 1 and 64", code="invalid-arg", field="--fan-out")
    first = item_from_json({**obj, "id": "candidate-1"}, base_dir=base_dir, where=where, default_id="candidate-1")
    return [first, *(BatchItem(f"candidate-{n}", first.kind, first.request, first.label,
                               sandbox_session_id=first.sandbox_session_id, source=dict(obj))
                     for n in range(2, count + 1))]
