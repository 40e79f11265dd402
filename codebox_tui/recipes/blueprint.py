"""Shape checks for raw Playground blueprints (``codebox validate-blueprint``).

Covers the top-level keys and step names of the blueprint format Playground understands offline;
every problem is reported with its JSON path. Remote resources (``url`` resources) are refused
because Codebox runs without network.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

from codebox_tui.bundle.safe_read import MAX_JSON_BYTES, loads_limited, read_regular
from codebox_tui.errors import BadInputError
from codebox_tui.jsonargs import json_path

KNOWN_STEPS = (
    "activatePlugin",
    "activateTheme",
    "cp",
    "defineWpConfigConsts",
    "defineSiteUrl",
    "enableMultisite",
    "importWxr",
    "importThemeStarterContent",
    "importWordPressFiles",
    "installPlugin",
    "installTheme",
    "login",
    "mkdir",
    "mv",
    "resetData",
    "request",
    "rm",
    "rmdir",
    "runPHP",
    "runPHPWithOptions",
    "runWpInstallationWizard",
    "runSql",
    "setSiteOptions",
    "setSiteLanguage",
    "unzip",
    "updateUserMeta",
    "writeFile",
    "writeFiles",
    "wp-cli",
)

BLUEPRINT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "$schema": {"type": "string"},
        "meta": {"type": "object"},
        "landingPage": {"type": "string", "pattern": "^/"},
        "preferredVersions": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"php": {"type": "string", "pattern": r"^(\d+\.\d+|latest)$"}, "wp": {"type": "string"}},
        },
        "features": {"type": "object", "properties": {"networking": {"type": "boolean"}}},
        "extraLibraries": {"type": "array", "items": {"type": "string"}},
        "constants": {"type": "object"},
        "siteOptions": {"type": "object"},
        "plugins": {"type": "array"},
        "login": {"anyOf": [{"type": "boolean"}, {"type": "object"}]},
        "phpExtensionBundles": {"type": "array"},
        "steps": {
            "type": "array",
            "items": {
                "anyOf": [
                    {
                        "type": "object",
                        "required": ["step"],
                        "properties": {"step": {"enum": list(KNOWN_STEPS)}, "progress": {"type": "object"}},
                    },
                    {"type": "string"},
                    {"type": "boolean"},
                    {"type": "null"},
                ]
            },
        },
    },
}


def _remote_resources(value: Any, path: list[Any]) -> list[dict[str, str]]:
    found: list[dict[str, str]] = []
    if isinstance(value, dict):
        if value.get("resource") == "url":
            found.append(
                {
                    "code": "network-resource-refused",
                    "path": json_path(path),
                    "message": "url resources need network; Codebox runs offline (use a vfs or literal resource)",
                }
            )
        for key, item in value.items():
            found.extend(_remote_resources(item, [*path, key]))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found.extend(_remote_resources(item, [*path, i]))
    return found


def validate_blueprint_document(document: Any) -> list[dict[str, str]]:
    issues: list[dict[str, str]] = []
    validator = jsonschema.Draft202012Validator(BLUEPRINT_SCHEMA)
    for error in sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.absolute_path))):
        where = json_path(error.absolute_path)
        if error.validator == "anyOf" and isinstance(error.instance, dict) and "step" in error.instance:
            msg = f"unknown step {error.instance['step']!r}; expected one of: {', '.join(KNOWN_STEPS)}"
        elif error.validator == "anyOf" and isinstance(error.instance, dict):
            msg = "a step needs a 'step' name"
        else:
            msg = error.message
        issues.append({"code": f"invalid-blueprint-{error.validator}", "path": where, "message": msg})
    issues.extend(_remote_resources(document, []))
    return issues


def load_blueprint_document(path: Path) -> Any:
    """The blueprint file's JSON: a regular file only, size- and depth-limited (bundle/safe_read.py)."""
    return loads_limited(read_regular(path, MAX_JSON_BYTES).decode("utf-8"))


def validate_blueprint_file(path: Path) -> list[dict[str, str]]:
    try:
        document = load_blueprint_document(path)
    except FileNotFoundError:
        return [{"code": "invalid-blueprint", "path": "$", "message": f"file not found: {path}"}]
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return [{"code": "invalid-blueprint", "path": "$", "message": f"Blueprint JSON is invalid: {exc}"}]
    return validate_blueprint_document(document)


def load_blueprint_file(path: Path) -> dict[str, Any]:
    """A blueprint file Codebox can apply (``codebox boot --blueprint``, ``codebox site create --blueprint``): valid
    in shape and using only the steps :data:`APPLIED_STEPS`; otherwise a BadInputError naming the file, the first
    problem's JSON path and how many there are."""
    issues = validate_blueprint_file(path)
    document: Any = None
    if not issues:
        document = loads_limited(read_regular(path, MAX_JSON_BYTES).decode("utf-8"))
        issues = blueprint_unsupported(document, base="$")
    if issues:
        first = issues[0]
        more = f" (and {len(issues) - 1} more problem(s); see `codebox validate-blueprint`)" if len(issues) > 1 else ""
        raise BadInputError(
            f"--blueprint {path}: {first['path']}: {first['message']}{more}", code=first["code"], field=first["path"]
        )
    assert isinstance(document, dict)
    return document


# What ``recipe-run`` applies from ``runtime.blueprint`` (after boot, in one PHP request, phase
# ``run_blueprint_steps``). Anything else is an ``unsupported-field`` validation issue, never ignored.
APPLIED_STEPS: dict[str, tuple[str, ...]] = {
    "runPHP": ("code",),
    "setSiteOptions": ("options",),
    "writeFile": ("path", "data"),
    "mkdir": ("path",),
    "rm": ("path",),
    "activatePlugin": ("pluginPath",),
    "activateTheme": ("themeFolderName",),
}
IGNORED_KEYS = ("$schema", "meta")  # descriptive only
APPLIED_KEYS = ("steps", "siteOptions")


def blueprint_unsupported(document: dict[str, Any], base: str = "$.runtime.blueprint") -> list[dict[str, str]]:
    """Blueprint parts recipe-run cannot apply, as ``unsupported-field`` issues with their JSON paths."""
    out: list[dict[str, str]] = []

    def flag(path: str, why: str) -> None:
        out.append(
            {
                "code": "unsupported-field",
                "path": path,
                "message": f"this runtime does not apply {why}; it applies the steps "
                f"{', '.join(APPLIED_STEPS)} and siteOptions",
            }
        )

    for key in document:
        if key not in IGNORED_KEYS and key not in APPLIED_KEYS:
            flag(f"{base}.{key}", f"the blueprint key {key!r}")
    for i, step in enumerate(document.get("steps") or []):
        if not isinstance(step, dict):
            continue  # strings/booleans/null are no-op entries in the blueprint format
        name = step.get("step")
        if name not in APPLIED_STEPS:
            flag(f"{base}.steps[{i}].step", f"the blueprint step {name!r}")
            continue
        for field in APPLIED_STEPS[str(name)]:
            value = step.get(field)
            ok = isinstance(value, dict) if field == "options" else isinstance(value, str)
            if not ok:
                out.append(
                    {
                        "code": "invalid-blueprint-step",
                        "path": f"{base}.steps[{i}].{field}",
                        "message": f"{name} needs {field!r} as {'an object' if field == 'options' else 'a string'}",
                    }
                )
    return out


def blueprint_php(document: dict[str, Any]) -> str:
    """PHP (after wp-load.php) applying siteOptions then the steps in order; prints a JSON report."""
    lines = ["$codebox_bp = [];"]
    options = document.get("siteOptions")
    if isinstance(options, dict):
        document = {
            **document,
            "steps": [{"step": "setSiteOptions", "options": options}, *(document.get("steps") or [])],
        }
    for i, step in enumerate(document.get("steps") or []):
        if not isinstance(step, dict):
            continue
        name = step.get("step")
        arg = {k: step.get(k) for k in APPLIED_STEPS.get(str(name), ())}
        if name == "runPHP":
            code = str(arg["code"]).strip()
            code = code[5:] if code.startswith("<?php") else code
            body = f"ob_start(); (function () {{ {code}\n}})(); $o = ob_get_clean();"
            lines.append(f"{body} $codebox_bp[] = ['step' => 'runPHP', 'index' => {i}, 'output' => $o];")
        elif name == "setSiteOptions":
            lines.append(
                f"foreach (json_decode({json.dumps(json.dumps(arg['options']))}, true) as $k => $v) "
                f"{{ update_option($k, $v); }} $codebox_bp[] = ['step' => 'setSiteOptions', 'index' => {i}];"
            )
        elif name == "writeFile":
            lines.append(
                f"wp_mkdir_p(dirname({json.dumps(arg['path'])})); $r = file_put_contents("
                f"{json.dumps(arg['path'])}, {json.dumps(arg['data'])}); "
                f"$codebox_bp[] = ['step' => 'writeFile', 'index' => {i}, 'ok' => $r !== false];"
            )
        elif name == "mkdir":
            lines.append(
                f"$codebox_bp[] = ['step' => 'mkdir', 'index' => {i}, 'ok' => wp_mkdir_p({json.dumps(arg['path'])})];"
            )
        elif name == "rm":
            lines.append(
                f"$codebox_bp[] = ['step' => 'rm', 'index' => {i}, 'ok' => @unlink({json.dumps(arg['path'])})];"
            )
        elif name == "activatePlugin":
            lines.append(
                "require_once ABSPATH . 'wp-admin/includes/plugin.php'; "
                f"$p = {json.dumps(arg['pluginPath'])}; $p = str_starts_with($p, WP_PLUGIN_DIR) ? "
                "plugin_basename($p) : $p; if (!str_ends_with($p, '.php')) { $p = $p . '/' . basename($p)"
                " . '.php'; } $r = activate_plugin($p); $codebox_bp[] = ['step' => 'activatePlugin', "
                f"'index' => {i}, 'ok' => !is_wp_error($r), 'error' => is_wp_error($r) ? "
                "$r->get_error_message() : null];"
            )
        elif name == "activateTheme":
            lines.append(
                f"switch_theme({json.dumps(arg['themeFolderName'])}); $codebox_bp[] = ['step' => "
                f"'activateTheme', 'index' => {i}, 'ok' => get_stylesheet() === "
                f"{json.dumps(arg['themeFolderName'])}];"
            )
    lines.append("echo json_encode($codebox_bp);")
    return "\n".join(lines)


def blueprint_file_writes(blueprint: dict[str, Any]) -> list[tuple[str, bytes]]:
    """(sandbox path, bytes) of each ``writeFile`` step with an absolute path and text data: what the recipe's
    set-up writes, attributed to it in the site-state diff (docs/site-state.md, "Attribution")."""
    out = []
    for step in blueprint.get("steps") or []:
        if isinstance(step, dict) and step.get("step") == "writeFile":
            path, data = step.get("path"), step.get("data")
            if isinstance(path, str) and path.startswith("/") and isinstance(data, str):
                out.append((path, data.encode("utf-8")))
    return out


def runs_php(blueprint: dict[str, Any]) -> bool:
    """Whether a ``runPHP`` step is in the blueprint: its writes are known to the host only by reading them after
    the phase (docs/site-state.md, "Attribution")."""
    return any(isinstance(step, dict) and step.get("step") == "runPHP" for step in blueprint.get("steps") or [])


def reviewed_code_ran(blueprint: dict[str, Any], mount_targets: list[str]) -> str | None:
    """Why code under review may have run during the blueprint phase, or None: the phase loads WordPress, so a
    mount under ``mu-plugins`` (or in place of a drop-in) runs in it, and an ``activatePlugin`` or
    ``activateTheme`` step runs the activated code (its activation hook, its ``functions.php``)."""
    for target in mount_targets:
        target = target.rstrip("/")
        if target.startswith("/wordpress/wp-content/mu-plugins") or (
            target.startswith("/wordpress/wp-content/") and target.count("/") == 3 and target.endswith(".php")
        ):
            return f"the mount {target} is loaded with WordPress"
    for index, step in enumerate(blueprint.get("steps") or []):
        if isinstance(step, dict) and step.get("step") in ("activatePlugin", "activateTheme"):
            return f"step {index} ({step['step']}) runs the code it activates"
    return None
