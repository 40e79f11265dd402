"""The schema registry: generated files match the models, and real bundles validate against them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from codebox_tui.contracts import schemas
from codebox_tui.contracts.bundle import (
    ChangedFiles,
    Diagnostics,
    Manifest,
    Review,
    RuntimeReferenceManifest,
    RuntimeReplayIndex,
    WorkspacePatch,
)
from codebox_tui.contracts.bundle import (
    TestResults as ResultsModel,
)
from tests.factories.bundles import make_bundle, typical_change


def test_written_schema_files_match_the_models() -> None:
    assert schemas.stale_files() == [], "run: python -m codebox_tui.contracts.schemas --write"


def test_every_registered_schema_generates_with_its_id() -> None:
    for schema_id in schemas.schema_names():
        generated = schemas.generate_json_schema(schema_id)
        assert generated["$id"] == schema_id
        assert generated["type"] == "object"


def test_unknown_schema_id_is_a_clear_error() -> None:
    with pytest.raises(schemas.UnknownSchemaError, match="unknown schema id 'wp-codebox/nope/v1'"):
        schemas.generate_json_schema("wp-codebox/nope/v1")


def test_stale_detection_sees_edits_and_leftovers(tmp_path: Path) -> None:
    schemas.write_all(tmp_path)
    assert schemas.stale_files(tmp_path) == []
    victim = tmp_path / schemas.schema_file_name("wp-codebox/changed-files/v1")
    victim.write_text(victim.read_text().replace("relativePath", "relPath"))
    (tmp_path / "old.v1.json").write_text("{}")
    assert schemas.stale_files(tmp_path) == ["changed-files.v1.json", "old.v1.json"]


@pytest.mark.parametrize(
    ("rel", "model"),
    [
        ("manifest.json", Manifest),
        ("files/changed-files.json", ChangedFiles),
        ("files/review.json", Review),
        ("files/test-results.json", ResultsModel),
        ("files/diagnostics.json", Diagnostics),
        ("files/workspace-patch.json", WorkspacePatch),
        ("files/runtime-reference-manifest.json", RuntimeReferenceManifest),
        ("files/runtime-replay-index.json", RuntimeReplayIndex),
    ],
)
def test_captured_documents_validate_against_their_models(tmp_path: Path, rel: str, model: type) -> None:
    summary, _ = make_bundle(tmp_path, typical_change)
    document = json.loads((summary.path / rel).read_text())
    model.model_validate(document)  # type: ignore[attr-defined]
    if "schema" in document:
        broken = dict(document, schema="wp-codebox/wrong/v9")
        with pytest.raises(ValidationError):
            model.model_validate(broken)  # type: ignore[attr-defined]
