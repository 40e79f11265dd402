"""Typed-artifact payload schemas (spec §2 rule 14) are checked as the reference's validator does: JSON Schema
2020-12 compiled non-strictly (Ajv), so JavaScript regular expressions (ECMA-262, ``u`` flag), draft-07
``dependencies`` still applied, and a schema it cannot compile (another ``$schema``, the draft-04 ``id``, a
``$ref`` that does not resolve) is a ``payload-schema-violation`` — never an uncaught exception.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from codebox_tui.bundle.verify import JsPatternError, js_pattern, payload_schema_errors


def _outcome(schema: dict[str, Any], payload: Any) -> str:
    try:
        return "ok" if not payload_schema_errors(schema, payload) else "payload-invalid"
    except jsonschema.SchemaError:
        return "schema-invalid"


CASES = [
    ({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}, {}, "schema-invalid"),
    ({"$schema": "https://json-schema.org/draft/2019-09/schema"}, {}, "schema-invalid"),
    ({"$schema": "http://json-schema.org/draft/2020-12/schema"}, {}, "schema-invalid"),  # http is another id
    ({"$schema": "https://json-schema.org/draft/2020-12/schema#"}, {}, "ok"),
    ({"$ref": "https://example.invalid/schema.json"}, {}, "schema-invalid"),  # no fetch, no crash
    ({"$ref": "#/$defs/nope"}, {}, "schema-invalid"),
    ({"anyOf": [{"type": "object"}, {"$ref": "#/nope"}]}, {}, "schema-invalid"),  # even where not reached
    ({"$defs": {"x": {"$ref": "#/nope"}}, "type": "object"}, {}, "ok"),  # an unused definition is not compiled
    ({"$id": "https://x.test/root", "$defs": {"a": {"$id": "a.json", "type": "number"}}, "$ref": "a.json"}, 5, "ok"),
    ({"id": "x", "type": "object"}, {}, "schema-invalid"),
    ({"properties": {"a": {"id": "x"}}}, {}, "schema-invalid"),
    ({"properties": {"id": {"type": "string"}}}, {"id": 1}, "payload-invalid"),  # a property named id is fine
    ({"dependencies": {"a": ["b"]}}, {"a": 1}, "payload-invalid"),
    ({"dependencies": {"a": {"required": ["c"]}}}, {"a": 1}, "payload-invalid"),
    ({"dependencies": {"a": ["b"]}}, {"b": 1}, "ok"),
    ({"type": "string", "format": "email"}, "not-an-email", "ok"),  # formats are not asserted
    ({"type": "string", "pattern": "^\\d+$"}, "\u0661\u0662", "payload-invalid"),  # \d is ASCII in JS
    ({"type": "string", "pattern": "^\\w+$"}, "é", "payload-invalid"),
    ({"type": "string", "pattern": "^a$"}, "a\n", "payload-invalid"),  # $ is the end of the input
    ({"type": "string", "pattern": "^a.b$"}, "a\u2028b", "payload-invalid"),  # . stops at line terminators
    ({"type": "string", "pattern": "^\\s$"}, "\u00a0", "ok"),  # JS whitespace includes NBSP
    ({"type": "string", "pattern": "^\\s$"}, "\x1c", "payload-invalid"),  # ...but not the file separator
    ({"type": "string", "pattern": "^(?<y>\\d{4})-\\k<y>$"}, "2026-2026", "ok"),  # JS named groups
    ({"type": "string", "pattern": "a\\Z"}, "a", "schema-invalid"),  # not an escape in JS (u flag)
    ({"type": "string", "pattern": "(?i)a"}, "A", "schema-invalid"),
    ({"type": "string", "pattern": "a{"}, "a{", "schema-invalid"),
    ({"type": "string", "pattern": "(?=a)*"}, "a", "schema-invalid"),  # a quantified assertion
    ({"type": "string", "pattern": "a?+"}, "a", "schema-invalid"),  # no possessive quantifiers in JS
    ({"patternProperties": {"^\\d$": {"type": "string"}}}, {"\u0661": 1}, "ok"),  # key not matched in JS
    ({"patternProperties": {"^\\d$": {"type": "string"}}}, {"1": 1}, "payload-invalid"),
    ({"propertyNames": {"pattern": "^[a-z]+$"}}, {"ok": 1, "Bad": 2}, "payload-invalid"),
]


@pytest.mark.parametrize(("schema", "payload", "expected"), CASES, ids=[str(i) for i in range(len(CASES))])
def test_payload_schema_outcome_matches_the_reference_validator(
    schema: dict[str, Any], payload: Any, expected: str
) -> None:
    assert _outcome(schema, payload) == expected


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        ("\\b", "", False),
        ("\\B", "", True),
        ("\\bé", "é", False),
        ("[]", "a", False),
        ("[^]", "\n", True),
        ("^\\u{1F600}$", "\U0001f600", True),
        ("^\\cJ$", "\n", True),
        ("^[\\b]$", "\x08", True),
        ("^\\0$", "\x00", True),
    ],
)
def test_js_pattern_semantics(pattern: str, text: str, matches: bool) -> None:
    assert bool(js_pattern(pattern).search(text)) is matches


def test_unicode_property_escapes_fail_closed() -> None:
    """``\\p{L}`` is valid JavaScript, but Python's ``re`` cannot evaluate it: reported, never guessed."""
    with pytest.raises(JsPatternError):
        js_pattern("^\\p{L}+$")
    assert _outcome({"type": "string", "pattern": "^\\p{L}+$"}, "abc") == "schema-invalid"
