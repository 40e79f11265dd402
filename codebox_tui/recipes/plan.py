"""The resolved plan of a recipe (``recipe-run --dry-run``): what would run, with nothing booted or written."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from codebox_tui.contracts.canonical import stable_json
from codebox_tui.contracts.recipe import ExtraPlugin, WorkspaceRecipe
from codebox_tui.contracts.runtime import RuntimePolicy
from codebox_tui.jsonargs import resolve_source
from codebox_tui.lifecycle.request import public_url_from_text
from codebox_tui.recipes.validate import RecipeValidation, all_steps, preview_hold_seconds
from codebox_tui.runtime.backends import BACKEND_WIRE_NAMES, chosen_backend, default_php
from codebox_tui.runtime.catalog import get_command, parse_args
from codebox_tui.runtime.mounts import plugin_target

DRY_RUN_SCHEMA = "wp-codebox/recipe-run-dry-run/v1"


def workspace_target(seed_type: str, slug: str | None, target: str | None) -> str:
    if target:
        return target
    if seed_type == "plugin_scaffold":
        return f"/wordpress/wp-content/plugins/{slug}"
    if seed_type == "theme_scaffold":
        return f"/wordpress/wp-content/themes/{slug}"
    return f"/workspace/{slug}"


def extra_plugin_load_as(plugin: ExtraPlugin) -> str:
    """How an extra plugin loads: a single ``.php`` file is always a must-use plugin (README, "Recipes")."""
    return "mu-plugin" if plugin.source.endswith(".php") else plugin.loadAs


def extra_plugin_target(load_as: str, slug: str) -> str:
    return plugin_target(load_as, slug)


def policy_hash(policy: RuntimePolicy) -> str:
    data = policy.model_dump(mode="json", by_alias=True)
    return hashlib.sha256(stable_json(data).encode("utf-8")).hexdigest()


def build_plan(
    recipe: WorkspaceRecipe,
    policy: RuntimePolicy,
    base_dir: Path,
    env: dict[str, str] | None = None,
    backend: str | None = None,
) -> dict[str, Any]:
    environ = dict(os.environ) if env is None else env
    rt = recipe.runtime
    chosen = chosen_backend(backend, rt.backend)
    steps: list[dict[str, Any]] = []
    for phase, index, step in all_steps(recipe):
        spec = get_command(step.command)
        allowed = step.command in policy.commands
        steps.append(
            {
                "phase": phase,
                "index": index,
                "command": step.command,
                "args": list(step.args),
                "parsedArgs": parse_args(spec, step.args),
                "timeoutMs": step.timeoutMs,
                "allowFailure": step.allowFailure,
                "advisory": step.advisory,
                "policy": {
                    "status": "allowed" if allowed else "denied",
                    "command": step.command,
                    "approvals": policy.approvals,
                    "filesystem": policy.filesystem,
                },
            }
        )
    return {
        "runtime": {
            "backend": BACKEND_WIRE_NAMES[chosen],
            "name": rt.name,
            "wp": rt.wp,
            "phpVersion": rt.phpVersion or default_php(chosen),
            "blueprint": rt.blueprint or {},
            # the recipe's own hold (runtime.preview); recipe-run's --preview-* options win over it
            **(
                {
                    "preview": {
                        "holdSeconds": preview_hold_seconds(rt.preview.hold),
                        "port": rt.preview.port,
                        "publicUrl": public_url_from_text(rt.preview.publicUrl),
                    }
                }
                if rt.preview
                else {}
            ),
        },
        "mounts": [
            {
                "type": m.type,
                "source": str(resolve_source(base_dir, m.source).resolve()),
                "target": m.target,
                "mode": m.mode,
                "writeMode": "readonly" if m.mode == "readonly" else "live" if m.live else "copy-on-write",
                "phase": m.phase,
                "planned": True,
            }
            for m in recipe.inputs.mounts
        ],
        "workspaces": [
            {
                "type": w.seed.type,
                "slug": w.seed.slug,
                "mode": w.mode,
                "target": workspace_target(w.seed.type, w.seed.slug, w.target),
                "source": str(resolve_source(base_dir, w.seed.source).resolve()) if w.seed.source else None,
            }
            for w in recipe.inputs.workspaces
        ],
        "extra_plugins": [
            {
                "source": p.source,
                "slug": p.slug or Path(p.source).stem,
                "loadAs": extra_plugin_load_as(p),
                "activate": p.activate,
                "target": extra_plugin_target(extra_plugin_load_as(p), p.slug or Path(p.source).stem),
            }
            for p in recipe.inputs.extra_plugins
        ],
        "stagedFiles": [
            {"source": str(resolve_source(base_dir, f.source).resolve()), "target": f.target, "planned": True}
            for f in recipe.inputs.stagedFiles
        ],
        "probes": [
            {
                "name": p.name,
                "command": p.step.command,
                "args": list(p.step.args),
                "expectJson": p.expectJson,
                "allowFailure": p.allowFailure,
                "policy": {"status": "allowed" if p.step.command in policy.commands else "denied"},
            }
            for p in recipe.probes
        ],
        "siteSeeds": [
            {"name": s.name, "type": s.type, "action": "import" if s.type == "fixture" else "skipped"}
            for s in recipe.inputs.siteSeeds
        ],
        "secretEnv": [
            {"name": n, "available": bool(environ.get(n)), "status": "available" if environ.get(n) else "missing"}
            for n in recipe.inputs.secretEnv
        ],
        "policy": {**policy.model_dump(mode="json", by_alias=True), "hash": policy_hash(policy)},
        "workflow": {"steps": steps},
        "artifacts": recipe.artifacts.model_dump(mode="json", by_alias=True, exclude_none=True),
    }


def dry_run(
    validation: RecipeValidation, base_dir: Path, env: dict[str, str] | None = None, backend: str | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "schema": DRY_RUN_SCHEMA,
        "success": validation.valid,
        "recipePath": validation.recipe_path,
        "dryRun": True,
        "valid": validation.valid,
        "validation": {"issues": [i.to_dict() for i in validation.issues]},
    }
    if validation.valid and validation.recipe is not None and validation.policy is not None:
        out["plan"] = build_plan(validation.recipe, validation.policy, base_dir, env, backend)
    return out
