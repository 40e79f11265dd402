"""Payload schema checks: the typed-artifacts index and tool-call transcripts validated against the JSON Schemas
they declare, with the schema itself checked up front.

``jsonschema`` and ``referencing`` (about a tenth of a second to import) load only when a bundle carries an
inline payload schema to apply, so verifying a run's bundle, on every run, does without them."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from codebox_tui.bundle.verify.common import (
    TOOL_CALL_TRANSCRIPT_SCHEMA,
    TYPED_ARTIFACTS_INDEX_SCHEMA,
    Checker,
    load_json,
)
from codebox_tui.bundle.verify.jsregex import JsPatternError, js_pattern
from codebox_tui.bundle.verify.references import ref_hash, ref_listed

if TYPE_CHECKING:
    import jsonschema

SCHEMA_2020_IDS = ("https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#")


@functools.cache
def _payload_checking() -> tuple[type[jsonschema.Draft202012Validator], jsonschema.FormatChecker]:
    """The validator class for payloads (JavaScript regexes and draft-07 ``dependencies``, as Ajv's) and the format
    checker for their schemas, built the first time a payload schema is applied."""
    import jsonschema  # noqa: PLC0415 - jsonschema loads only when a bundle carries a payload schema to apply

    def pattern_keyword(validator: Any, pattern: Any, instance: Any, schema: Any) -> Any:
        if validator.is_type(instance, "string") and not js_pattern(pattern).search(instance):
            yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")

    def pattern_properties_keyword(validator: Any, patterns: Any, instance: Any, schema: Any) -> Any:
        if not validator.is_type(instance, "object"):
            return
        for pattern, subschema in patterns.items():
            compiled = js_pattern(pattern)
            for key, value in instance.items():
                if compiled.search(key):
                    yield from validator.descend(value, subschema, path=key, schema_path=pattern)

    def dependencies_keyword(validator: Any, dependencies: Any, instance: Any, schema: Any) -> Any:
        """Draft-07 ``dependencies`` (Ajv's 2020 validator still applies it): arrays require, schemas apply."""
        if not validator.is_type(instance, "object"):
            return
        for name, dependency in dependencies.items():
            if name not in instance:
                continue
            if validator.is_type(dependency, "array"):
                for required in dependency:
                    if required not in instance:
                        yield jsonschema.ValidationError(f"{required!r} is a dependency of {name!r}")
            else:
                yield from validator.descend(instance, dependency, schema_path=name)

    payload_validator = jsonschema.validators.extend(
        jsonschema.Draft202012Validator,
        {
            "pattern": pattern_keyword,
            "patternProperties": pattern_properties_keyword,
            "dependencies": dependencies_keyword,
        },
    )
    meta_formats = jsonschema.FormatChecker()
    meta_formats.checkers.pop("regex", None)  # patterns are JavaScript regexes, checked by js_pattern instead
    return payload_validator, meta_formats


_SUBSCHEMA_MAPS = ("properties", "patternProperties", "dependentSchemas", "dependencies")
_SUBSCHEMA_ONE = (
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "additionalItems",
)
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")


def _check_node_patterns(node: dict[str, Any]) -> None:
    """A schema node's ``pattern`` and ``patternProperties`` keys must be regular expressions JavaScript accepts."""
    import jsonschema  # noqa: PLC0415 - as in _payload_checking: only when a payload schema is applied

    patterns = [("pattern", node["pattern"])] if isinstance(node.get("pattern"), str) else []
    if isinstance(node.get("patternProperties"), dict):
        patterns += [("patternProperties", pattern) for pattern in node["patternProperties"]]
    for keyword, pattern in patterns:
        try:
            js_pattern(pattern)
        except JsPatternError as error:
            raise jsonschema.SchemaError(f"{keyword} {pattern!r}: {error}") from error


def _subschemas(node: dict[str, Any]) -> Iterator[Any]:
    """The schemas a node holds under the applicator keywords, in keyword order."""
    for key in _SUBSCHEMA_MAPS:
        if isinstance(node.get(key), dict):
            yield from node[key].values()
    for key in _SUBSCHEMA_ONE:
        yield node.get(key)
    for key in _SUBSCHEMA_LISTS:
        if isinstance(node.get(key), list):
            yield from node[key]


def _schema_problems_up_front(schema: Any) -> None:
    """What Ajv rejects when it compiles a schema, before any payload is seen: a ``$schema`` other than 2020-12,
    the draft-04 ``id`` keyword, a pattern JavaScript rejects, and a ``$ref`` that does not resolve (every ref
    reachable from the root, followed into what it names). Raises ``jsonschema.SchemaError``."""
    import jsonschema  # noqa: PLC0415 - as in _payload_checking: only when a payload schema is applied
    from referencing import Registry  # noqa: PLC0415 - jsonschema's reference resolver, loaded with it
    from referencing.exceptions import Unresolvable  # noqa: PLC0415 - as above
    from referencing.jsonschema import DRAFT202012  # noqa: PLC0415 - as above

    if isinstance(schema, dict) and "$schema" in schema and schema["$schema"] not in SCHEMA_2020_IDS:
        raise jsonschema.SchemaError(f"no schema with key or ref {schema['$schema']!r} (only JSON Schema 2020-12)")
    root_id = schema.get("$id", "") if isinstance(schema, dict) and isinstance(schema.get("$id"), str) else ""
    registry: Any = Registry().with_resource(uri=root_id, resource=DRAFT202012.create_resource(schema))
    seen: set[int] = set()

    def walk(node: Any, resolver: Any) -> None:
        if not isinstance(node, dict) or id(node) in seen:
            return
        seen.add(id(node))
        if isinstance(node.get("$id"), str) and node is not schema:
            resolver = resolver.in_subresource(DRAFT202012.create_resource(node))
        if "id" in node:
            raise jsonschema.SchemaError('NOT SUPPORTED: keyword "id", use "$id" for schema ID')
        _check_node_patterns(node)
        if isinstance(node.get("$ref"), str):
            try:
                resolved = resolver.lookup(node["$ref"])
            except Unresolvable as error:
                raise jsonschema.SchemaError(f"can't resolve reference {node['$ref']!r}") from error
            walk(resolved.contents, resolved.resolver)
        for child in _subschemas(node):
            walk(child, resolver)

    walk(schema, registry.resolver(base_uri=root_id))


def payload_schema_errors(schema: dict[str, Any], payload: Any) -> list[str]:
    """Every JSON Schema 2020-12 error of ``payload`` ("/pointer message"); raises SchemaError for a schema the
    reference's validator would refuse to compile (bad shape, other ``$schema``, ``id``, unresolvable ``$ref``,
    a pattern JavaScript rejects)."""
    import jsonschema  # noqa: PLC0415 - as in _payload_checking: only when a payload schema is applied

    payload_validator, meta_formats = _payload_checking()
    payload_validator.check_schema(schema, format_checker=meta_formats)
    _schema_problems_up_front(schema)
    validator = payload_validator(schema)
    try:
        errors = sorted(validator.iter_errors(payload), key=lambda e: [str(p) for p in e.absolute_path])
    except (JsPatternError, RecursionError) as error:
        raise jsonschema.SchemaError(f"the schema cannot be evaluated: {error}") from error
    except Exception as error:  # referencing's Unresolvable and friends: a ref that only fails when reached
        if type(error).__module__.startswith(("referencing", "jsonschema")):
            raise jsonschema.SchemaError(f"the schema cannot be evaluated: {error}") from error
        raise
    return [f"/{'/'.join(str(p) for p in error.absolute_path)} {error.message}" for error in errors]


def check_typed_artifacts(check: Checker, listed: dict[str, dict[str, Any]], path: str) -> None:
    """Rule 14: ``wp-codebox/typed-artifacts-index/v1``."""
    doc = load_json(check.bundle, path)
    if (
        not isinstance(doc, dict)
        or doc.get("schema") != TYPED_ARTIFACTS_INDEX_SCHEMA
        or not isinstance(doc.get("artifacts"), list)
    ):
        check.add(
            "malformed-reference",
            path,
            f"typed artifacts index must be a JSON object with schema {TYPED_ARTIFACTS_INDEX_SCHEMA!r} and artifacts[]",
            file=path,
        )
        return
    for index, item in enumerate(doc["artifacts"]):
        where = f"{path}:artifacts[{index}]"
        artifact = item.get("artifact") if isinstance(item, dict) else None
        if not isinstance(item, dict) or not isinstance(artifact, dict) or not isinstance(artifact.get("path"), str):
            check.add("malformed-reference", where, "typed artifact entries need artifact.path", file=path)
            continue
        if ref_listed(check, listed, artifact["path"], f"{where}.artifact.path") and isinstance(
            artifact.get("sha256"), str
        ):
            ref_hash(check, artifact["path"], artifact["sha256"], f"{where}.artifact.sha256", plain=True)
        schema = item["payload_schema"] if "payload_schema" in item else item.get("payloadSchema")
        if not isinstance(schema, dict) or "payload" not in item:
            continue  # a schema named by id (a string) is not resolvable offline
        import jsonschema  # noqa: PLC0415 - as in _payload_checking: only when a payload schema is applied

        try:
            errors = payload_schema_errors(schema, item["payload"])
        except jsonschema.SchemaError as error:
            check.add(
                "payload-schema-violation",
                f"{where}.payload_schema",
                f"payload_schema is not a valid JSON Schema: {error.message}",
                file=path,
            )
            continue
        except Exception as error:  # unresolvable $ref, bad regex, ...: fail closed, never raise
            check.add(
                "payload-schema-violation",
                f"{where}.payload_schema",
                f"payload_schema cannot be applied: {type(error).__name__}: {error}",
                file=path,
            )
            continue
        if errors:
            check.add(
                "payload-schema-violation",
                f"{where}.payload",
                f"payload does not match payload_schema: {'; '.join(errors)}",
                file=path,
                details={"errors": errors},
            )


_CALL_FIELDS = ("call_id", "tool_name", "tool_type", "phase", "status")


def _policy_ok(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("policy"), str)


def check_tool_calls(check: Checker, listed: dict[str, dict[str, Any]], path: str) -> None:
    """Rule 15: ``wp-codebox/tool-call-transcript/v1``."""
    doc = load_json(check.bundle, path)
    if (
        not isinstance(doc, dict)
        or doc.get("schema") != TOOL_CALL_TRANSCRIPT_SCHEMA
        or not isinstance(doc.get("tool_calls"), list)
        or not _policy_ok(doc.get("redaction"))
    ):
        check.add(
            "malformed-reference",
            path,
            f"tool-call transcript must be a JSON object with schema {TOOL_CALL_TRANSCRIPT_SCHEMA!r}, "
            "tool_calls[] and redaction.policy",
            file=path,
        )
        return
    for index, call in enumerate(doc["tool_calls"]):
        where = f"{path}:tool_calls[{index}]"
        if not isinstance(call, dict):
            check.add("malformed-reference", where, "a tool call must be an object", file=path)
            continue
        missing = [k for k in _CALL_FIELDS if not isinstance(call.get(k), str)]
        if not _policy_ok(call.get("redaction")):
            missing.append("redaction.policy")
        if missing:
            check.add(
                "malformed-reference",
                where,
                f"tool call needs string {', '.join(missing)}",
                file=path,
                details={"missing": missing},
            )
        for key in ("input_artifacts", "output_artifacts"):
            refs = call.get(key)
            if refs is None:
                continue
            if not isinstance(refs, list):
                check.add("malformed-reference", f"{where}.{key}", f"{key} must be an array", file=path)
                continue
            for r_index, ref in enumerate(refs):
                r_where = f"{where}.{key}[{r_index}]"
                if not isinstance(ref, dict) or not isinstance(ref.get("path"), str):
                    check.add("malformed-reference", r_where, "an artifact ref needs a string path", file=path)
                elif ref_listed(check, listed, ref["path"], f"{r_where}.path") and "sha256" in ref:
                    ref_hash(check, ref["path"], ref["sha256"], f"{r_where}.sha256")
