"""The design's own example documents (``shared/spec/agent-sessions.md``, "Example documents") validate against
Codebox's generated JSON Schemas and parse with its models: readers accept every documented shape, while what
Codebox writes stays complete (docs/contracts.md, agent documents)."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest

from codebox_tui.contracts.schemas import generate_json_schema, model_for
from tests.factories.paths import shared_dir

_BLOCK = re.compile(r"^`(wp-codebox/[a-z-]+/v1)`:\n```json\n(.*?)\n```", re.MULTILINE | re.DOTALL)


def _examples() -> dict[str, dict[str, Any]]:
    text = (shared_dir() / "spec" / "agent-sessions.md").read_text(encoding="utf-8")
    section = text.split("## Example documents", 1)[1].split("\n## ", 1)[0]
    return {schema: json.loads(body) for schema, body in _BLOCK.findall(section)}


EXAMPLES = _examples()


def test_the_examples_were_found() -> None:
    assert set(EXAMPLES) == {
        "wp-codebox/tool-bridge/v1",
        "wp-codebox/sandbox-completion-outcome/v1",
        "wp-codebox/agent-result/v1",
    }


@pytest.mark.parametrize("schema_id", sorted(EXAMPLES))
def test_the_design_example_validates_against_the_generated_schema(schema_id: str) -> None:
    document = EXAMPLES[schema_id]
    assert document["schema"] == schema_id
    jsonschema.Draft202012Validator(generate_json_schema(schema_id)).validate(document)
    model_for(schema_id).model_validate(document)
