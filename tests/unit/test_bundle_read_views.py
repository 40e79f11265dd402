"""The typed bundle reader (contracts/bundle_read.py, bundle/reader.py): ``manifest.json``, ``review.json`` and
``metadata.json`` are read with tolerant views. A Codebox-written bundle, a reference-written one with a minimal
review and one whose review has wrong types all load and are shown; the wrong types are reported, never raised,
and ``codebox artifacts show --json`` echoes what a well-formed bundle wrote, key for key."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from codebox_tui.bundle.provenance import runtime_versions
from codebox_tui.bundle.reader import load_bundle
from codebox_tui.bundle.summary import artifact_summary
from codebox_tui.contracts import bundle as contracts
from codebox_tui.contracts import bundle_read as views
from tests.factories.bundles import make_bundle, typical_change
from tests.factories.reference_bundle import write_reference_bundle

PLUGIN = "/wordpress/wp-content/plugins/p"


def _show(bundle: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codebox_tui", "artifacts", "show", str(bundle), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _reference(tmp_path: Path) -> Path:
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir()
    after.mkdir()
    (before / "a.php").write_text("<?php\n// a\n")
    (after / "a.php").write_text("<?php\n// b\n")
    (after / "new.txt").write_text("new\n")
    write_reference_bundle(tmp_path / "ref", before, after, target=PLUGIN)
    return tmp_path / "ref"


def _doc(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


# -- (a) a bundle Codebox wrote -------------------------------------------------------------------------------


def test_a_codebox_bundle_reads_typed_and_clean(tmp_path: Path) -> None:
    summary, _ = make_bundle(tmp_path, typical_change)
    loaded = load_bundle(summary.path)
    review, metadata = _doc(summary.path / "files/review.json"), _doc(summary.path / "metadata.json")
    assert loaded.valid and loaded.read_problems == []
    assert isinstance(loaded.review, views.ReviewView) and isinstance(loaded.metadata, views.MetadataView)
    assert loaded.id == _doc(summary.path / "manifest.json")["id"] == loaded.manifest.id
    assert loaded.review.summary == review["summary"]
    assert loaded.review.stats.total == review["stats"]["total"] == len(loaded.changed_files)
    assert loaded.review.evidence.contentDigestB == review["evidence"]["contentDigestB"]
    assert loaded.risk_flags == review["riskFlags"]
    assert [(m.source, m.target, m.mode) for m in loaded.metadata.mounts] == [
        (m["source"], m["target"], m["mode"]) for m in metadata["mounts"]
    ]
    assert loaded.metadata.policy == metadata["policy"]
    assert runtime_versions(loaded.metadata)["wordpressVersion"] == "6.5.5"


def test_show_json_echoes_a_codebox_bundle_as_written(tmp_path: Path) -> None:
    def change_and_plant(source: Path) -> None:
        typical_change(source)
        (source / "link.php").symlink_to("/etc/hostname")  # a skipped entry

    summary, _ = make_bundle(tmp_path, change_and_plant)
    out = _show(summary.path, "--json")
    assert out.returncode == 0, out.stderr
    shown = json.loads(out.stdout)
    review = _doc(summary.path / "files/review.json")
    changed = _doc(summary.path / "files/changed-files.json")
    metadata = _doc(summary.path / "metadata.json")
    # key for key, in the order written (json.loads keeps the order; list(items()) compares it)
    assert list(shown["stats"].items()) == list(review["stats"].items())
    assert [list(e.items()) for e in shown["skipped"]] == [list(e.items()) for e in changed["skipped"]] != []
    assert [list(b.items()) for b in shown["baselines"]] == [list(b.items()) for b in metadata["baselines"]]
    assert list(shown["runtime"]) == list(metadata["provenance"]["runtime"])
    assert shown["createdAt"] == _doc(summary.path / "manifest.json")["createdAt"]
    assert "readProblems" not in shown  # only a bundle with unreadable fields carries it


# -- (b) a bundle the reference wrote, with a minimal review ---------------------------------------------------


def test_a_reference_bundle_reads_clean_and_finds_its_php_version(tmp_path: Path) -> None:
    bundle = _reference(tmp_path)
    loaded = load_bundle(bundle)
    assert loaded.valid and loaded.read_problems == []
    assert loaded.review.evidence.contentDigestB is None  # the reference does not record it
    assert loaded.review.stats.total == 2 and loaded.review.stats.added == 1
    # the reference keeps the PHP version only in its asset preflight
    assert runtime_versions(loaded.metadata) == {
        "backend": "wordpress-playground",
        "wordpressVersion": "6.5.5",
        "phpVersion": "8.3",
    }
    shown = artifact_summary(loaded).model_dump(mode="json")
    review = _doc(bundle / "files/review.json")
    assert list(shown["stats"].items()) == list(review["stats"].items())
    assert shown["runtime"] == {"backend": "wordpress-playground", "wordpressVersion": "6.5.5", "phpVersion": "8.3"}


def test_a_minimal_review_loads_and_is_shown(tmp_path: Path) -> None:
    """A review with a few of the keys Codebox writes (no stats, evidence, flags or provenance) still loads:
    the missing fields read as their defaults, with nothing to report."""
    bundle = _reference(tmp_path)
    (bundle / "files/review.json").write_text(
        json.dumps({"schema": "wp-codebox/artifact-review/v1", "artifactId": "x", "summary": "Changed 2 files."})
    )
    loaded = load_bundle(bundle)
    assert not loaded.valid  # its hash no longer matches the manifest: shown, with the violation
    assert loaded.read_problems == []
    assert loaded.review.summary == "Changed 2 files." and loaded.review.stats.total == 0
    assert loaded.review.riskFlags == [] and loaded.review.evidence.contentDigestB is None
    shown = artifact_summary(loaded).model_dump(mode="json")
    assert shown["stats"] == {} and shown["summary"] == "Changed 2 files." and shown["riskFlags"] == []
    out = _show(bundle)
    assert out.returncode == 0, out.stderr
    assert "summary  Changed 2 files." in out.stdout.splitlines()


# -- (c) a review with wrong types ------------------------------------------------------------------------------

WRONG_REVIEW = {
    "schema": "wp-codebox/artifact-review/v1",
    "summary": 42,
    "stats": {"added": "three", "modified": 1, "deleted": 0, "total": 1},
    "riskFlags": ["binary-files", {"not": "a flag"}, "secret-in-path"],
    "evidence": "files/patch.diff",
    "changedFiles": [7, {"path": "/x", "status": ["modified"]}],
    "provenance": [],
}


def _wrong_types(tmp_path: Path) -> Path:
    summary, _ = make_bundle(tmp_path, typical_change)
    (summary.path / "files/review.json").write_text(json.dumps(WRONG_REVIEW))
    metadata = _doc(summary.path / "metadata.json")
    metadata["mounts"] = ["not a mount", *metadata["mounts"]]
    metadata["provenance"]["runtime"]["phpVersion"] = {"major": 8}
    (summary.path / "metadata.json").write_text(json.dumps(metadata))
    return summary.path


def test_wrong_types_read_as_defaults_and_are_reported(tmp_path: Path) -> None:
    loaded = load_bundle(_wrong_types(tmp_path))
    assert not loaded.valid
    assert loaded.review.summary is None
    assert loaded.review.stats.added == 0 and loaded.review.stats.modified == 1  # only the bad field
    assert loaded.review.riskFlags == ["binary-files", "secret-in-path"]  # one bad flag hides no other
    assert loaded.review.evidence == views.ReviewEvidenceView()
    assert [f.path for f in loaded.review.changedFiles] == ["/x"] and loaded.review.changedFiles[0].status == ""
    assert [m.target for m in loaded.metadata.mounts] == ["/wordpress/wp-content/plugins/plugin"]
    assert loaded.metadata.provenance.runtime.phpVersion is None
    assert runtime_versions(loaded.metadata)["wordpressVersion"] == "6.5.5"  # the rest still reads
    where = [p.split(": ")[0] + ": " + p.split(": ")[1] for p in loaded.read_problems]
    assert sorted(where) == sorted(
        [
            "files/review.json: summary",
            "files/review.json: riskFlags[1]",
            "files/review.json: evidence",
            "files/review.json: changedFiles[0]",
            "files/review.json: provenance",
            "files/review.json: stats.added",
            "files/review.json: changedFiles[1].status",  # the index as written, though item 0 was dropped
            "metadata.json: mounts[0]",
            "metadata.json: provenance.runtime.phpVersion",
        ]
    )
    assert "files/review.json: summary: Input should be a valid string" in loaded.read_problems


def test_wrong_types_are_shown_by_artifacts_show(tmp_path: Path) -> None:
    bundle = _wrong_types(tmp_path)
    shown = json.loads(_show(bundle, "--json").stdout)
    assert shown["summary"] is None and shown["stats"] == {"modified": 1, "deleted": 0, "total": 1}
    assert shown["riskFlags"] == ["binary-files", "secret-in-path"]
    assert (
        len(shown["readProblems"]) == 9
        and "files/review.json: summary: Input should be a valid string" in shown["readProblems"]
    )
    out = _show(bundle)
    assert out.returncode == 0, out.stderr
    assert "unread   9 field(s) of the wrong type, shown as their default:" in out.stdout.splitlines()
    assert "  files/review.json: stats.added: Input should be a valid integer" in out.stdout


def test_a_review_that_is_not_an_object_in_a_field_never_hides_the_bundle(tmp_path: Path) -> None:
    summary, _ = make_bundle(tmp_path, typical_change)
    review = {key: ["wrong"] for key in views.ReviewView.model_fields}  # every field a list
    review["schema"] = "wp-codebox/artifact-review/v1"
    (summary.path / "files/review.json").write_text(json.dumps(review))
    loaded = load_bundle(summary.path)
    assert loaded.changed_files and loaded.patch  # the change itself is shown
    assert loaded.review.summary is None and loaded.review.riskFlags == ["wrong"]
    assert len(loaded.read_problems) >= 5


# -- the views themselves ----------------------------------------------------------------------------------------


def test_a_document_that_is_not_an_object_reads_as_empty_with_the_problem() -> None:
    view = views.ReviewView.read(["not", "an", "object"])
    assert view.model_dump() == views.ReviewView().model_dump()
    assert view.read_problems() == ["(document): expected a JSON object, got list"]


def test_problems_are_capped_per_view() -> None:
    view = views.ReviewView.read({"riskFlags": list(range(500))})
    assert view.riskFlags == []
    assert len(view.read_problems()) == views.MAX_PROBLEMS + 1
    assert view.read_problems()[-1] == "(more problems not listed)"


def test_written_keeps_the_written_order_and_unknown_keys() -> None:
    view = views.ReviewStatsView.read({"total": 3, "future": {"x": 1}, "added": 3, "modified": "bad"})
    assert list(view.written().items()) == [("total", 3), ("future", {"x": 1}), ("added", 3)]


def test_numbers_read_as_version_text_but_booleans_do_not() -> None:
    view = views.RuntimeVersionsView.read({"phpVersion": 8.3, "wordpressVersion": True})
    assert view.phpVersion == "8.3" and view.wordpressVersion is None
    assert view.read_problems() == ["wordpressVersion: Input should be a valid string"]


@pytest.mark.parametrize(
    ("view", "contract"),
    [
        (views.ManifestView, contracts.Manifest),
        (views.ManifestFileView, contracts.ManifestFile),
        (views.ReviewView, contracts.Review),
        (views.ReviewStatsView, contracts.ReviewStats),
        (views.ReviewChangedFileView, contracts.ReviewChangedFile),
    ],
)
def test_every_view_field_is_a_field_of_its_write_contract(view: type[BaseModel], contract: type[BaseModel]) -> None:
    """One definition of each concept: a view only relaxes its contract (defaults, tolerance); it never names
    a field the contract does not have."""

    def aliases(model: type[BaseModel]) -> set[str]:
        return {info.alias or name for name, info in model.model_fields.items()}

    assert aliases(view) <= aliases(contract)


def test_the_skipped_view_names_the_contract_fields_in_its_order() -> None:
    contract = [info.alias or name for name, info in contracts.SkippedEntry.model_fields.items()]
    fields = list(views.SkippedView.model_fields)
    assert fields[: len(contract)] == contract and fields[len(contract) :] == ["path"]  # path: foreign writers


def test_the_mcp_tool_returns_the_same_summary_and_the_problems(tmp_path: Path) -> None:
    """``artifacts_show`` (docs/mcp.md) is the same summary as ``artifacts show --json``, through the SDK's
    in-memory client: its published output schema accepts the typed fields and ``readProblems``."""
    import anyio
    from mcp import Client

    from codebox_tui.mcp_server import build_server

    async def call(bundle: Path) -> Any:
        async with Client(build_server()) as client:
            return await client.call_tool("artifacts_show", {"bundle": str(bundle)})

    (tmp_path / "clean").mkdir()
    clean, _ = make_bundle(tmp_path / "clean", typical_change)
    result = anyio.run(call, clean.path)
    assert not result.is_error, result.content
    assert result.structured_content == json.loads(_show(clean.path, "--json").stdout)
    (tmp_path / "broken").mkdir()
    broken = anyio.run(call, _wrong_types(tmp_path / "broken"))
    assert not broken.is_error, broken.content
    assert len(broken.structured_content["readProblems"]) == 9
