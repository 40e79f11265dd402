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

from codebox_tui.recipes.validate import json_path

KNOWN_STEPS = (
    "activatePlugin", "activateTheme", "cp", "defineWpConfigConsts", "defineSiteUrl", "enableMultisite",
    "importWxr", "importThemeStarterContent", "importWordPressFiles", "installPlugin", "installTheme", "login",
    "mkdir", "mv", "resetData", "request", "rm", "rmdir", "runPHP", "runPHPWithOptions", "runWpInstallationWizard",
    "runSql", "setSiteOptions", "setSiteLanguage", "unzip", "updateUserMeta", "writeFile", "writeFiles", "wp-cli",
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
            "type": "object", "additionalProperties": False,
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
            "items": {"anyOf": [
                {"type": "object", "required": ["step"],
                 "properties": {"step": {"enum": list(KNOWN_STEPS)}, "progress": {"type": "object"}}},
                {"type": "string"}, {"type": "boolean"}, {"type": "null"},
            ]},
        },
    },
}


def _remote_resources(value: Any, path: list[Any]) -> list[dict[str, str]]:
    found: list[dict[str, str]] = []
    if isinstance(value, dict):
        if value.get("resource") == "url":
            found.append({"code": "network-resource-refused", "path": json_path(path),
                          "message": "url resources need network; Codebox runs offline "
                                     "(use a vfs or literal resource)"})
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


def validate_blueprint_file(path: Path) -> list[dict[str, str]]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return [{"code": "invalid-blueprint", "path": "$", "message": f"file not found: {path}"}]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return [{"code": "invalid-blueprint", "path": "$", "message": f"Blueprint JSON is invalid: {exc}"}]
    return validate_blueprint_document(document)
