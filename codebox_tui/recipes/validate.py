"""Validate a ``wp-codebox/workspace-recipe/v1`` document and report every problem at once.

Stage 1 is the generated JSON Schema (Draft 2020-12, through ``jsonschema``): each error is reported
with its JSON path (``$.workflow.steps[0].command``) and what was expected. Stage 2 runs only on a
schema-valid recipe and checks what a schema cannot: command ids and their arguments against the
catalog, local sources that must exist, URL sources (refused unless
``CODEBOX_ALLOW_NETWORK_DOWNLOADS=1``), site-seed bounds, environment names, and that the effective
runtime policy covers every command the workflow needs. Nothing here boots a sandbox.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

import jsonschema
from pydantic import ValidationError

from codebox_tui.browser.checkpoints import parse_checkpoints
from codebox_tui.bundle.safe_read import MAX_JSON_BYTES, JsonTooDeepError, loads_limited, read_regular
from codebox_tui.contracts.recipe import (
    RECIPE_SCHEMA,
    ExtraPlugin,
    RecipeStep,
    SiteSeed,
    WorkspaceRecipe,
    recipe_json_schema,
)
from codebox_tui.contracts.runtime import RuntimePolicy
from codebox_tui.durations import parse_duration
from codebox_tui.errors import BadInputError, CodeboxError
from codebox_tui.jsonargs import json_arg_file, json_path, load_json_arg, resolve_source
from codebox_tui.lifecycle.request import public_url_from_text
from codebox_tui.recipes.blueprint import blueprint_unsupported, validate_blueprint_document
from codebox_tui.runtime.bench_args import PATH_SEPARATOR
from codebox_tui.runtime.catalog import command_catalog, parse_args
from codebox_tui.runtime.core_checkout import COMMAND as CORE_PHPUNIT
from codebox_tui.runtime.core_checkout import check_core_step
from codebox_tui.runtime.mounts import SITE_TARGETS
from codebox_tui.runtime.wordpress_builds import resolve_build
from codebox_tui.settings import get_settings

VALIDATION_SCHEMA = "wp-codebox/recipe-validation/v1"
ALLOW_DOWNLOADS_ENV = "CODEBOX_ALLOW_NETWORK_DOWNLOADS"
ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


@dataclass
class Issue:
    code: str
    path: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "path": self.path, "message": self.message}


@dataclass
class RecipeValidation:
    recipe_path: str
    issues: list[Issue] = field(default_factory=list)
    recipe: WorkspaceRecipe | None = None
    policy: RuntimePolicy | None = None

    @property
    def valid(self) -> bool:
        return not self.issues and self.recipe is not None

    def summary(self) -> dict[str, int]:
        r = self.recipe
        if r is None:
            return {
                "steps": 0,
                "mounts": 0,
                "workspaces": 0,
                "extraPlugins": 0,
                "siteSeeds": 0,
                "stagedFiles": 0,
                "probes": 0,
            }
        wf = r.workflow
        return {
            "steps": len(wf.before) + len(wf.steps) + len(wf.after),
            "mounts": len(r.inputs.mounts),
            "workspaces": len(r.inputs.workspaces),
            "extraPlugins": len(r.inputs.extra_plugins),
            "siteSeeds": len(r.inputs.siteSeeds),
            "stagedFiles": len(r.inputs.stagedFiles),
            "probes": len(r.probes),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": VALIDATION_SCHEMA,
            "success": self.valid,
            "recipePath": self.recipe_path,
            "valid": self.valid,
            "issues": [i.to_dict() for i in self.issues],
            "summary": self.summary(),
        }


@lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(recipe_json_schema())


def _describe(error: jsonschema.ValidationError) -> tuple[str, str, str]:
    """(code, path, message) for one schema error, saying what was expected."""
    path = json_path(error.absolute_path)
    v = error.validator
    if v == "additionalProperties":
        extra = (
            sorted(set(error.instance) - set(error.schema.get("properties", {})))
            if isinstance(error.instance, dict)
            else []
        )
        allowed = ", ".join(sorted(error.schema.get("properties", {}))) or "none"
        issues = []
        for name in extra:
            hint = " (use extra_plugins)" if name == "extraPlugins" else ""
            issues.append(f"unknown field {name!r}{hint}; expected one of: {allowed}")
        return (
            "unknown-field",
            json_path([*error.absolute_path, extra[0]]) if len(extra) == 1 else path,
            "; ".join(issues) or error.message,
        )
    if v == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return "missing-field", json_path([*error.absolute_path, missing]), f"required field {missing!r} is missing"
    if v == "const":
        return "invalid-value", path, f"expected {error.validator_value!r}, got {error.instance!r}"
    if v == "enum":
        options = ", ".join(repr(o) for o in error.validator_value)
        return "invalid-value", path, f"expected one of {options}, got {error.instance!r}"
    if v == "type":
        return "invalid-type", path, f"expected {error.validator_value}, got {type(error.instance).__name__}"
    if v == "pattern":
        return "invalid-format", path, f"{error.instance!r} does not match the pattern {error.validator_value}"
    if v == "anyOf":
        # Optional fields generate anyOf [X, null]: report the best inner reason.
        inner = [e for e in (error.context or []) if e.validator != "type" or e.validator_value != "null"]
        if inner:
            best = jsonschema.exceptions.best_match(inner)
            return _describe(best)
        return "invalid-value", path, error.message
    if v in ("minItems", "maxItems", "minimum", "maximum", "minLength", "maxLength"):
        return "out-of-range", path, f"{v} {error.validator_value}: {error.message}"
    return "invalid-recipe", path, error.message


def schema_issues(document: Any) -> list[Issue]:
    errors = sorted(_validator().iter_errors(document), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    return [Issue(*_describe(e)) for e in errors]


def load_recipe_document(path: Path) -> Any:
    try:  # a regular file only (never blocks on a FIFO), depth-limited JSON: bundle/safe_read.py
        text = read_regular(path, MAX_JSON_BYTES).decode("utf-8")
    except FileNotFoundError as exc:
        raise BadInputError(f"Recipe file not found: {path}", code="invalid-recipe", field=str(path)) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInputError(f"Recipe file cannot be read: {exc}", code="invalid-recipe", field=str(path)) from exc
    try:
        return loads_limited(text)
    except JsonTooDeepError as exc:
        raise BadInputError(f"Recipe file {path} {exc}", code="invalid-recipe", field=str(path)) from exc
    except json.JSONDecodeError as exc:
        raise BadInputError(
            f"Recipe JSON is invalid: {exc.msg} at line {exc.lineno} column {exc.colno}",
            code="invalid-recipe",
            field=str(path),
        ) from exc


def validate_recipe_file(path: Path, *, allow_downloads: bool | None = None) -> RecipeValidation:
    try:
        document = load_recipe_document(path)
    except BadInputError as error:
        result = RecipeValidation(str(path))
        result.issues.append(Issue("invalid-recipe", "$", error.message))
        return result
    return validate_recipe_document(
        document, base_dir=path.resolve().parent, recipe_path=str(path), allow_downloads=allow_downloads
    )


def validate_recipe_document(
    document: Any, *, base_dir: Path, recipe_path: str = "<inline>", allow_downloads: bool | None = None
) -> RecipeValidation:
    """``allow_downloads``: whether URL sources are accepted (None: the ``allow_network_downloads``
    setting, ``CODEBOX_ALLOW_NETWORK_DOWNLOADS``)."""
    result = RecipeValidation(recipe_path)
    if allow_downloads is None:
        allow_downloads = get_settings().allow_network_downloads
    if not isinstance(document, dict):
        result.issues.append(Issue("invalid-recipe", "$", f"expected a JSON object, got {type(document).__name__}"))
        return result
    result.issues.extend(schema_issues(document))
    if result.issues:
        return result
    try:
        recipe = WorkspaceRecipe.model_validate(document)
    except ValidationError as exc:  # schema and model agree; kept as a safety net
        for err in exc.errors():
            result.issues.append(Issue("invalid-recipe", json_path(err["loc"]), err["msg"]))
        return result
    result.recipe = recipe
    if recipe.kind == "reproduction" and not recipe.probes:
        result.issues.append(
            Issue(
                "invalid-recipe",
                "$.probes",
                "a reproduction recipe (kind: reproduction) needs "
                "at least one probe whose expectJson describes the bug's behaviour",
            )
        )
    result.issues.extend(_semantic_issues(recipe, base_dir, allow_downloads))
    policy, policy_issues = effective_policy(recipe, base_dir)
    result.policy = policy
    result.issues.extend(policy_issues)
    return result


def all_steps(recipe: WorkspaceRecipe) -> list[tuple[str, int, RecipeStep]]:
    wf = recipe.workflow
    return [
        (phase, i, s)
        for phase, steps in (("before", wf.before), ("steps", wf.steps), ("after", wf.after))
        for i, s in enumerate(steps)
    ]


def local_sources(recipe: WorkspaceRecipe, base_dir: Path) -> list[tuple[str, Path]]:
    """Every host file or folder the recipe names, with its JSON path: mount, workspace-seed, extra-plugin,
    site-seed and staged-file sources and the steps' file arguments (``code-file=…``, ``@file`` JSON), resolved
    against ``base_dir``. What a recipe shipped elsewhere (a batch item, docs/scale-out.md) must carry."""
    named: list[tuple[str, str | None]] = [
        (f"$.inputs.mounts[{i}].source", m.source) for i, m in enumerate(recipe.inputs.mounts)
    ]
    named += [
        (f"$.inputs.workspaces[{i}].seed.source", w.seed.source)
        for i, w in enumerate(recipe.inputs.workspaces)
        if w.seed.type == "directory"
    ]
    named += [(f"$.inputs.extra_plugins[{i}].source", p.source) for i, p in enumerate(recipe.inputs.extra_plugins)]
    named += [
        (f"$.inputs.siteSeeds[{i}].source", s.source)
        for i, s in enumerate(recipe.inputs.siteSeeds)
        if s.type == "fixture"
    ]
    named += [(f"$.inputs.stagedFiles[{i}].source", s.source) for i, s in enumerate(recipe.inputs.stagedFiles)]
    catalog = {c.id: c for c in command_catalog().commands}
    steps = [(f"$.workflow.{phase}[{i}]", step) for phase, i, step in all_steps(recipe)]
    steps += [(f"$.probes[{i}].step", probe.step) for i, probe in enumerate(recipe.probes)]
    for where, step in steps:
        spec = catalog.get(step.command)
        formats = {a.name: a.format for a in spec.acceptedArgs} if spec else {}
        for raw in step.args:
            key, sep, value = raw.partition("=")
            if sep and formats.get(key) in ("path", "directory"):
                named.append((f"{where}.args.{key}", value))
            elif sep and formats.get(key) == "json" and value.startswith("@"):
                named.append((f"{where}.args.{key}", value[1:]))
    return [
        (where, resolve_source(base_dir, source).resolve()) for where, source in named if source and not _is_url(source)
    ]


def _is_url(source: str) -> bool:
    return bool(URL.match(source))


def _check_sandbox_path(path: str, where: str) -> list[Issue]:
    parts = PurePosixPath(path).parts
    if not path.startswith("/") or any(seg in (".", "..") for seg in path.split("/")):
        return [
            Issue("invalid-sandbox-path", where, f"expected an absolute sandbox path without '.' or '..', got {path!r}")
        ]
    if len(parts) < 2:
        return [Issue("invalid-sandbox-path", where, "the sandbox root '/' cannot be a mount target")]
    return []


# Fields of the reference's recipe shape (docs/contracts.md, "Workspace recipe") this runtime accepts (so
# reference recipes parse) but does not execute. Each one that is set yields an ``unsupported-field`` issue,
# so ``recipe validate`` says so and ``recipe-run`` refuses before booting instead of silently ignoring it.
# Values: why, in a few words.
UNSUPPORTED_RUNTIME = {
    "workers": "the Playground sidecar runs one PHP worker per sandbox",
    "wordpressInstallMode": "WordPress is always installed from the offline build",
    "assets": "WordPress comes from the offline build, not a recipe directory or zip",
    "extensions": "PHP extension manifests are not loaded",
    "bundledExtensions": "no extra PHP extensions are bundled",
    "backendPackage": "only the built-in Playground backend exists",
    "stack": "runtime stacks are not implemented",
    "overlays": "runtime overlays are not implemented",
    "hostNodeHeap": "the sidecar's Node heap is not configurable per recipe",
}
UNSUPPORTED_PREVIEW = {
    "siteUrl": "WordPress's address is the preview's, or publicUrl's when one is given",
    "bind": "a recipe's preview listens on loopback (codebox run --preview-bind binds elsewhere)",
    "lease": "preview leases are not implemented; hold the preview for a duration instead",
}
UNSUPPORTED_INPUTS = {
    "workspace_preloads": "workspace preloads are not implemented",
    "component_manifest": "component manifests are not implemented",
    "dependency_overlays": "composer dependency overlays are not implemented",
    "services": "host services (mysql/redis/smtp/http) are not provisioned (sandboxes are offline, SQLite only)",
    "externalServices": "external service boundaries need network access, which sandboxes never get",
    "pluginRuntime": "plugin runtime profiles (php ini, wp-config defines, setup, health probes) are not applied",
    "fixtureDatabases": "SQL fixture databases are not imported; use siteSeeds (JSON fixtures) instead",
    "fixtureUsers": "fixture users are not created; use a siteSeeds users scope",
    "userSessions": "logged-in user sessions are not implemented",
    "browserActors": "multi-actor browser scenarios are not implemented",
    "sourcePackages": "source packages are not implemented; use mounts or stagedFiles",
    "agent_bundles": "agent bundles are not implemented",
    "inherit": "recipe inheritance is not implemented",
    "inheritance": "recipe inheritance is not implemented",
}
UNSUPPORTED_TOP = {
    "fuzzRun": "fuzz runs are not implemented",
    "adversarialCampaigns": "adversarial campaigns are not implemented",
    "distribution": "distributions are not implemented",
}


def _is_set(value: Any) -> bool:
    return value is not None and value != [] and value != {}


def _unsupported(path: str, why: str) -> Issue:
    name = path.rsplit(".", 1)[-1]
    return Issue(
        "unsupported-field", path, f"this runtime does not implement {name!r}: {why}; remove it to run the recipe here"
    )


def unsupported_issues(recipe: WorkspaceRecipe) -> list[Issue]:
    """One ``unsupported-field`` issue per spec field that is set but that this runtime cannot execute."""
    issues: list[Issue] = []
    tables: list[tuple[dict[str, str], Any, str]] = [
        (UNSUPPORTED_TOP, recipe, "$"),
        (UNSUPPORTED_RUNTIME, recipe.runtime, "$.runtime"),
        (UNSUPPORTED_INPUTS, recipe.inputs, "$.inputs"),
    ]
    if recipe.runtime.preview is not None:
        tables.append((UNSUPPORTED_PREVIEW, recipe.runtime.preview, "$.runtime.preview"))
    for table, model, prefix in tables:
        issues += [
            _unsupported(f"{prefix}.{name}", why) for name, why in table.items() if _is_set(getattr(model, name))
        ]
    return (
        issues
        + _unsupported_input_issues(recipe)
        + _unsupported_step_issues(recipe)
        + _unsupported_artifact_issues(recipe)
    )


def _unsupported_input_issues(recipe: WorkspaceRecipe) -> list[Issue]:
    issues = [
        _unsupported(f"$.inputs.workspaces[{i}].sourceMode", "workspaces are always copied into scratch directories")
        for i, ws in enumerate(recipe.inputs.workspaces)
        if ws.sourceMode is not None
    ]
    for i, plugin in enumerate(recipe.inputs.extra_plugins):
        for name in (
            "sourcePath",
            "sourceRoot",
            "sourceSubpath",
            "sourceSubdir",
            "originalSource",
            "mountSlug",
            "composer",
        ):
            if getattr(plugin, name) is not None:
                issues.append(
                    _unsupported(
                        f"$.inputs.extra_plugins[{i}].{name}", "use 'source' (a local directory or .zip) and 'slug'"
                    )
                )
    for i, seed in enumerate(recipe.inputs.siteSeeds):
        where = f"$.inputs.siteSeeds[{i}]"
        for path, value, why in (
            (f"{where}.deterministicIds", seed.deterministicIds, "imported records get fresh ids"),
            (f"{where}.bootstrap", seed.bootstrap, "multisite bootstrap is not implemented"),
            (f"{where}.scopes.media", seed.scopes.media, "media records are not imported"),
        ):
            if value is not None:
                issues.append(_unsupported(path, why))
    return issues


def _unsupported_step_issues(recipe: WorkspaceRecipe) -> list[Issue]:
    steps = [(f"$.workflow.{ph}[{i}]", st) for ph, i, st in all_steps(recipe)]
    steps += [(f"$.probes[{i}].step", p.step) for i, p in enumerate(recipe.probes)]
    issues: list[Issue] = []
    for where, step in steps:
        if step.continuation is not None:
            issues.append(_unsupported(f"{where}.continuation", "step continuations are not implemented"))
        if step.diagnostics is not None:
            issues.append(_unsupported(f"{where}.diagnostics", "query diagnostics are not captured"))
    return issues


def _unsupported_artifact_issues(recipe: WorkspaceRecipe) -> list[Issue]:
    a = recipe.artifacts
    issues: list[Issue] = []
    if isinstance(a.verify, dict):
        issues.append(
            _unsupported("$.artifacts.verify", "verify options (enabled/strict) are not implemented; use true or false")
        )
    if a.workspacePolicy is not None:
        issues.append(_unsupported("$.artifacts.workspacePolicy", "workspace policies are not implemented"))
    if a.typed:
        issues.append(_unsupported("$.artifacts.typed", "typed artifacts are not collected; use artifacts.paths"))
    issues += [
        _unsupported(f"$.artifacts.paths[{i}].parseJson", "declared artifacts are copied, not parsed")
        for i, art in enumerate(a.paths)
        if art.parseJson
    ]
    return issues


def _step_issues(step: RecipeStep, where: str, catalog: dict[str, Any], base_dir: Path) -> list[Issue]:
    spec = catalog.get(step.command)
    if spec is None or not spec.recipe:
        known = ", ".join(sorted(c for c, s in catalog.items() if s.recipe))
        return [
            Issue(
                "unsupported-command", f"{where}.command", f"unknown command {step.command!r}; expected one of: {known}"
            )
        ]
    try:
        parsed = parse_args(spec, step.args)
    except BadInputError as error:
        sub = error.field or ""
        loc = f"{where}.{sub}" if sub.startswith("args[") else f"{where}.args"
        return [Issue(error.code, loc, error.message)]
    try:
        if step.command == CORE_PHPUNIT:
            check_core_step(parsed, base_dir)
        if step.command == "wordpress.browser-probe" and parsed.get("checkpoint"):
            parse_checkpoints(parsed["checkpoint"].split(PATH_SEPARATOR))
    except CodeboxError as error:  # bad input, or a missing toolchain (the polyfills)
        return [Issue(error.code or "invalid-arg", f"{where}.args", error.message)]
    return _arg_format_issues(spec.acceptedArgs, parsed, where, base_dir)


def _semantic_issues(recipe: WorkspaceRecipe, base_dir: Path, allow_downloads: bool) -> list[Issue]:
    catalog = {c.id: c for c in command_catalog().commands}
    issues: list[Issue] = unsupported_issues(recipe) + _runtime_issues(recipe)
    for i, probe in enumerate(recipe.probes):
        issues.extend(_step_issues(probe.step, f"$.probes[{i}].step", catalog, base_dir))
    issues += _probe_name_issues(recipe) + _artifact_path_issues(recipe) + _staged_file_issues(recipe, base_dir)
    for phase, index, step in all_steps(recipe):
        issues.extend(_step_issues(step, f"$.workflow.{phase}[{index}]", catalog, base_dir))
    issues += _mount_issues(recipe, base_dir) + _workspace_issues(recipe, base_dir)
    for i, plugin in enumerate(recipe.inputs.extra_plugins):
        issues += _extra_plugin_issues(plugin, f"$.inputs.extra_plugins[{i}]", base_dir, allow_downloads)
    issues += _env_name_issues(recipe)
    for i, site_seed in enumerate(recipe.inputs.siteSeeds):
        issues.extend(_site_seed_issues(site_seed, f"$.inputs.siteSeeds[{i}]", base_dir))
    return issues


def preview_hold_seconds(hold: str | float | None) -> float | None:
    """``runtime.preview.hold`` in seconds (a bare number is seconds, as everywhere)."""
    if hold is None:
        return None
    return float(hold) if isinstance(hold, (int, float)) else parse_duration(hold, "$.runtime.preview.hold")


def _preview_issues(recipe: WorkspaceRecipe) -> list[Issue]:
    """What the schema cannot say about ``runtime.preview``: a hold longer than nothing, a usable public URL."""
    preview = recipe.runtime.preview
    if preview is None:
        return []
    issues: list[Issue] = []
    if preview.hold is not None and not preview_hold_seconds(preview.hold):
        issues.append(
            Issue(
                "invalid-value",
                "$.runtime.preview.hold",
                f"expected a hold longer than zero, such as 15m, got {preview.hold!r}",
            )
        )
    if preview.publicUrl is not None:
        try:
            public_url_from_text(preview.publicUrl)
        except BadInputError:
            issues.append(
                Issue(
                    "invalid-public-url",
                    "$.runtime.preview.publicUrl",
                    "expected an http:// or https:// URL with a host and no query, fragment or "
                    f"credentials, e.g. https://my-tunnel.example, got {preview.publicUrl!r}",
                )
            )
    return issues


def _runtime_issues(recipe: WorkspaceRecipe) -> list[Issue]:
    """The WordPress version resolves to an offline build; a raw blueprint has a shape this runtime applies."""
    issues: list[Issue] = []
    try:
        resolve_build(recipe.runtime.wp)
    except CodeboxError as error:
        issues.append(Issue(error.code or "unknown-wordpress-version", "$.runtime.wp", error.message))
    issues += _preview_issues(recipe)
    if recipe.runtime.blueprint is not None:
        found = validate_blueprint_document(recipe.runtime.blueprint)
        found += [] if found else blueprint_unsupported(recipe.runtime.blueprint)
        for item in found:
            issues.append(
                Issue(
                    item["code"],
                    "$.runtime.blueprint" + item["path"][1:]
                    if not item["path"].startswith("$.runtime")
                    else item["path"],
                    item["message"],
                )
            )
    return issues


def _probe_name_issues(recipe: WorkspaceRecipe) -> list[Issue]:
    names = [p.name for p in recipe.probes]
    return [
        Issue("duplicate-probe-name", f"$.probes[{i}].name", f"probe name {name!r} is used twice")
        for i, name in enumerate(names)
        if name in names[:i]
    ]


def _artifact_path_issues(recipe: WorkspaceRecipe) -> list[Issue]:
    issues: list[Issue] = []
    art_names = [re.sub(r"[^A-Za-z0-9_.-]+", "-", a.name).strip(".-") for a in recipe.artifacts.paths]
    for i, art in enumerate(recipe.artifacts.paths):
        issues.extend(_check_sandbox_path(art.path, f"$.artifacts.paths[{i}].path"))
        if art_names[i] in art_names[:i]:
            issues.append(
                Issue(
                    "duplicate-artifact-name",
                    f"$.artifacts.paths[{i}].name",
                    f"artifact name {art.name!r} collides with an earlier one",
                )
            )
    return issues


def _staged_file_issues(recipe: WorkspaceRecipe, base_dir: Path) -> list[Issue]:
    issues: list[Issue] = []
    for i, staged in enumerate(recipe.inputs.stagedFiles):
        where = f"$.inputs.stagedFiles[{i}]"
        issues.extend(_check_sandbox_path(staged.target, f"{where}.target"))
        if _is_url(staged.source):
            issues.append(Issue("invalid-source", f"{where}.source", "staged files must be recipe-local, not URLs"))
        elif not resolve_source(base_dir, staged.source).exists():
            issues.append(
                Issue(
                    "missing-source",
                    f"{where}.source",
                    f"staged file does not exist: {resolve_source(base_dir, staged.source)}",
                )
            )
    return issues


def _mount_issues(recipe: WorkspaceRecipe, base_dir: Path) -> list[Issue]:
    issues: list[Issue] = []
    targets: dict[str, str] = {}
    for i, mount in enumerate(recipe.inputs.mounts):
        where = f"$.inputs.mounts[{i}]"
        issues.extend(_check_sandbox_path(mount.target, f"{where}.target"))
        norm = re.sub(r"/+", "/", mount.target).rstrip("/")
        if norm in SITE_TARGETS:
            issues.append(
                Issue(
                    "invalid-sandbox-path",
                    f"{where}.target",
                    f"target {mount.target!r} would replace the WordPress site (or one of its core "
                    "folders); mount below it, e.g. /wordpress/wp-content/plugins/<slug>",
                )
            )
        if mount.live and mount.mode != "readwrite":
            issues.append(Issue("invalid-mount", f"{where}.live", "live is only for readwrite mounts"))
        if norm in targets:
            issues.append(
                Issue(
                    "duplicate-mount-target",
                    f"{where}.target",
                    f"target {mount.target!r} is already used by {targets[norm]}",
                )
            )
        targets[norm] = where
        issues += _mount_source_issues(resolve_source(base_dir, mount.source), mount.type, f"{where}.source")
    return issues


def _mount_source_issues(src: Path, kind: str, where: str) -> list[Issue]:
    if not src.exists():
        return [Issue("missing-source", where, f"mount source does not exist: {src}")]
    if kind == "directory" and not src.is_dir():
        return [Issue("invalid-source", where, f"expected a directory, got a file: {src}")]
    if kind == "file" and not src.is_file():
        return [Issue("invalid-source", where, f"expected a file: {src}")]
    return []


def _workspace_issues(recipe: WorkspaceRecipe, base_dir: Path) -> list[Issue]:
    issues: list[Issue] = []
    for i, ws in enumerate(recipe.inputs.workspaces):
        where = f"$.inputs.workspaces[{i}]"
        seed = ws.seed
        if seed.type in ("plugin_scaffold", "theme_scaffold") and not seed.slug:
            issues.append(Issue("invalid-slug", f"{where}.seed.slug", f"a {seed.type} seed needs a slug"))
        if seed.type == "directory":
            if not seed.source:
                issues.append(Issue("missing-source", f"{where}.seed.source", "a directory seed needs a source"))
            elif not resolve_source(base_dir, seed.source).is_dir():
                issues.append(
                    Issue(
                        "missing-source",
                        f"{where}.seed.source",
                        f"seed directory does not exist: {resolve_source(base_dir, seed.source)}",
                    )
                )
            if not seed.slug and not ws.target:
                issues.append(Issue("invalid-slug", f"{where}.seed.slug", "a directory seed needs a slug or a target"))
        if ws.target:
            issues.extend(_check_sandbox_path(ws.target, f"{where}.target"))
    return issues


def _extra_plugin_issues(plugin: ExtraPlugin, where: str, base_dir: Path, allow_downloads: bool) -> list[Issue]:
    if _is_url(plugin.source):
        if not plugin.source.startswith("https://") or not plugin.source.endswith(".zip"):
            return [Issue("invalid-source", f"{where}.source", "a URL source must be an https:// .zip")]
        if not allow_downloads:
            return [
                Issue(
                    "network-download-refused",
                    f"{where}.source",
                    f"URL sources are refused unless {ALLOW_DOWNLOADS_ENV}=1 is set "
                    "(Codebox runs offline); use a local directory or .zip",
                )
            ]
        return []
    issues: list[Issue] = []
    src = resolve_source(base_dir, plugin.source)
    if not src.exists():
        issues.append(Issue("missing-source", f"{where}.source", f"plugin source does not exist: {src}"))
    elif src.is_file() and src.suffix not in (".zip", ".php"):
        issues.append(
            Issue(
                "invalid-source",
                f"{where}.source",
                "expected a plugin directory, a .zip or a single-file must-use plugin (.php)",
            )
        )
    if plugin.pluginFile:
        slug = plugin.slug or src.stem
        if not plugin.pluginFile.startswith(f"{slug}/") or not plugin.pluginFile.endswith(".php"):
            issues.append(
                Issue(
                    "invalid-plugin-file",
                    f"{where}.pluginFile",
                    f"expected '{slug}/<file>.php', got {plugin.pluginFile!r}",
                )
            )
    return issues


def _env_name_issues(recipe: WorkspaceRecipe) -> list[Issue]:
    issues = [
        Issue("invalid-runtime-env", f"$.inputs.runtimeEnv.{name}", "environment names must match ^[A-Z_][A-Z0-9_]*$")
        for name in recipe.inputs.runtimeEnv
        if not ENV_NAME.match(name)
    ]
    issues += [
        Issue(
            "invalid-secret-env",
            f"$.inputs.secretEnv[{i}]",
            f"secret names must match ^[A-Z_][A-Z0-9_]*$, got {name!r}",
        )
        for i, name in enumerate(recipe.inputs.secretEnv)
        if not ENV_NAME.match(name)
    ]
    return issues


def _is_duration(value: str, field: str) -> bool:
    try:
        parse_duration(value, field)
    except BadInputError:
        return False
    return True


def _arg_format_issues(accepted: list[Any], parsed: dict[str, str], where: str, base_dir: Path) -> list[Issue]:
    issues: list[Issue] = []
    formats = {a.name: a.format for a in accepted}
    for name, value in parsed.items():
        fmt = formats.get(name)
        loc = f"{where}.args.{name}"
        if fmt == "viewport" and not re.fullmatch(r"[1-9]\d{1,4}x[1-9]\d{1,4}", value):
            issues.append(Issue("invalid-arg", loc, f"expected WIDTHxHEIGHT like 1280x800, got {value!r}"))
        elif fmt == "duration" and not _is_duration(value, loc):
            issues.append(
                Issue(
                    "invalid-arg",
                    loc,
                    f"expected a duration like 500ms, 30s or 2m (a bare number is seconds), got {value!r}",
                )
            )
        elif fmt and fmt.startswith("enum:") and value not in fmt[5:].split(","):
            issues.append(Issue("invalid-arg", loc, f"expected one of {fmt[5:]}, got {value!r}"))
        elif fmt and fmt.startswith("comma-enum:"):
            allowed = set(fmt[11:].split(","))
            bad = [v for v in value.split(",") if v.strip() not in allowed]
            if bad:
                issues.append(Issue("invalid-arg", loc, f"unknown {', '.join(bad)}; expected items of {fmt[11:]}"))
        elif fmt == "json":
            try:
                load_json_arg(value, base_dir, loc)
            except BadInputError as error:
                issues.append(Issue(error.code, loc, error.message))
        elif fmt == "path" and not resolve_source(base_dir, value).is_file():
            issues.append(Issue("missing-source", loc, f"file does not exist: {resolve_source(base_dir, value)}"))
        elif fmt == "directory" and not resolve_source(base_dir, value).is_dir():
            issues.append(Issue("missing-source", loc, f"folder does not exist: {resolve_source(base_dir, value)}"))
    return issues


def resolved_step_args(step: RecipeStep, base_dir: Path) -> list[str]:
    """Step args with every ``@path`` JSON argument made absolute against the recipe's directory."""
    spec = {c.id: c for c in command_catalog().commands}.get(step.command)
    json_args = {a.name for a in spec.acceptedArgs if a.format == "json"} if spec else set()
    out: list[str] = []
    for raw in step.args:
        key, sep, value = raw.partition("=")
        file = json_arg_file(value, base_dir) if sep and key in json_args else None
        out.append(f"{key}=@{file}" if file is not None else raw)
    return out


def _site_seed_issues(seed: SiteSeed, where: str, base_dir: Path) -> list[Issue]:
    issues: list[Issue] = []
    s = seed.scopes
    record_scopes = {"posts": s.posts, "pages": s.pages, "terms": s.terms, "options": s.options, "users": s.users}
    if not any(record_scopes.values()) and not s.activePlugins and not s.activeTheme:
        issues.append(Issue("missing-site-seed-scopes", f"{where}.scopes", "opt in to at least one scope"))
    if s.options is not None and not s.options.names:
        issues.append(
            Issue(
                "unbounded-site-seed-options",
                f"{where}.scopes.options.names",
                "an options scope must name the option keys it imports (allow-list)",
            )
        )
    if s.users is not None and s.users.anonymize is False:
        issues.append(
            Issue(
                "unsafe-site-seed-users",
                f"{where}.scopes.users.anonymize",
                "users are always anonymised; anonymize:false is not allowed",
            )
        )
    if seed.type == "fixture":
        if not seed.source:
            issues.append(Issue("missing-source", f"{where}.source", "a fixture seed needs a source JSON file"))
        else:
            file = resolve_source(base_dir, seed.source)
            if not file.is_file():
                issues.append(Issue("missing-source", f"{where}.source", f"fixture file does not exist: {file}"))
            else:
                try:
                    data = loads_limited(read_regular(file, MAX_JSON_BYTES).decode("utf-8"))
                    if not isinstance(data, dict):
                        raise ValueError("expected a JSON object")
                except (OSError, ValueError, UnicodeDecodeError) as exc:
                    issues.append(
                        Issue(
                            "invalid-source",
                            f"{where}.source",
                            f"fixture must be a JSON object {{posts, pages, terms, options, users, "
                            f"activePlugins, activeTheme}}: {exc}",
                        )
                    )
    else:
        if seed.source:
            issues.append(Issue("invalid-site-seed-source", f"{where}.source", "parent_site seeds take no source"))
        for name, scope in record_scopes.items():
            if scope is not None and not (scope.maxRecords or scope.ids or scope.slugs or scope.names):
                issues.append(
                    Issue(
                        "unbounded-site-seed-scope",
                        f"{where}.scopes.{name}",
                        "set maxRecords or explicit ids/slugs/names",
                    )
                )
    return issues


def derived_commands(recipe: WorkspaceRecipe, base_dir: Path | None = None) -> list[str]:
    """Every command the recipe needs a policy to allow, in first-use order."""
    catalog = {c.id: c for c in command_catalog().commands}
    out: list[str] = ["inspect-mounted-inputs"]

    def add(cmd: str) -> None:
        if cmd not in out:
            out.append(cmd)

    if recipe.inputs.extra_plugins or recipe.inputs.siteSeeds or recipe.inputs.workspaces:
        add("wordpress.run-php")
    for step in [s for _p, _i, s in all_steps(recipe)] + [p.step for p in recipe.probes]:
        add(step.command)
        spec = catalog.get(step.command)
        for extra in spec.requiresPolicyCommands if spec else []:
            add(extra)
        if step.command == "wordpress.browser-actions" and _has_evaluate(step, base_dir):
            add("wordpress.browser-actions.evaluate")
    return out


def _has_evaluate(step: RecipeStep, base_dir: Path | None) -> bool:
    for raw in step.args:
        key, _, value = raw.partition("=")
        if key == "steps-json":
            if value.startswith("@") and base_dir is None:
                return False
            try:
                steps = load_json_arg(value, base_dir or Path.cwd(), "steps-json")
            except BadInputError:
                return False
            return isinstance(steps, list) and any(isinstance(s, dict) and s.get("action") == "evaluate" for s in steps)
    return False


def effective_policy(recipe: WorkspaceRecipe, base_dir: Path | None = None) -> tuple[RuntimePolicy, list[Issue]]:
    needed = derived_commands(recipe, base_dir)
    explicit = recipe.runtime.policy
    if explicit is None:
        names = [n for n in recipe.inputs.secretEnv if ENV_NAME.match(n)]
        secrets: Any = names if names else "none"
        return RuntimePolicy(commands=needed, secrets=secrets), []
    issues: list[Issue] = []
    missing = [c for c in needed if c not in explicit.commands and c != "inspect-mounted-inputs"]
    if missing:
        issues.append(
            Issue(
                "runtime-policy-missing-command",
                "$.runtime.policy.commands",
                f"the policy must allow every command the workflow uses; missing: {', '.join(missing)}",
            )
        )
    if recipe.inputs.secretEnv:
        granted = explicit.secrets
        names = granted if isinstance(granted, list) else []
        absent = [n for n in recipe.inputs.secretEnv if n not in names and granted != "connector-scoped"]
        if absent:
            issues.append(
                Issue(
                    "invalid-secrets",
                    "$.runtime.policy.secrets",
                    f"the policy does not grant the secrets the recipe names: {', '.join(absent)}",
                )
            )
    return explicit, issues


__all__ = [
    "ALLOW_DOWNLOADS_ENV",
    "RECIPE_SCHEMA",
    "Issue",
    "RecipeValidation",
    "derived_commands",
    "effective_policy",
    "load_json_arg",
    "resolved_step_args",
    "unsupported_issues",
    "validate_recipe_document",
    "validate_recipe_file",
]
