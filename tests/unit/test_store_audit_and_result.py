"""apply-result/v1 normalisation (the reference's exact rules) and audit redaction/appending."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from codebox_tui.contracts.apply import ApplyResultInvalid, normalize_apply_result
from store.apply import adapter_names, load_adapter
from store.audit import append_apply_audit, read_audit, redact

GOOD = {
    "schema": "wp-codebox/apply-result/v1",
    "adapter": " git ",
    "status": "pr-opened",
    "target": {"repo": "x", "branch": "b"},
    "applied_files": ["a.php", " ", 3, ""],
    "audit_reference": "ref-1",
    "commit": "abc",
    "pr_url": "",
    "extra": "dropped",
}


def test_normalize_keeps_exactly_the_contract_keys() -> None:
    result = normalize_apply_result(GOOD)
    wire = result.to_wire()
    assert wire == {
        "schema": "wp-codebox/apply-result/v1",
        "adapter": "git",
        "status": "pr-opened",
        "target": {"repo": "x", "branch": "b"},
        "applied_files": ["a.php", "3"],
        "audit_reference": "ref-1",
        "commit": "abc",
    }


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"schema": "other"}, "result schema must be wp-codebox/apply-result/v1."),
        ({"adapter": "  "}, "result.adapter is required."),
        ({"status": None}, "result.status is required."),
        ({"target": []}, "result.target must be an object."),
        ({"applied_files": "a.php"}, "result.applied_files must be an array."),
        ({"audit_reference": ""}, "result.audit_reference is required."),
    ],
)
def test_normalize_rejects_with_the_reference_reasons(change: dict[str, object], reason: str) -> None:
    with pytest.raises(ApplyResultInvalid) as info:
        normalize_apply_result({**GOOD, **change})
    assert str(info.value) == reason
    with pytest.raises(ApplyResultInvalid, match="result must be an object"):
        normalize_apply_result(["not", "an", "object"])


def test_redaction_of_bodies_and_secrets() -> None:
    out = redact(
        {
            "patch": "diff --git ...",
            "result": {"target": {"api_key": "k", "path": "/t"}, "Authorization": "Bearer x"},
            "nested": [{"content": "x", "keep": 1, "gone": None}],
            "dropped": None,
        }
    )
    assert out == {
        "patch": "[redacted]",
        "result": {"target": {"api_key": "[redacted]", "path": "/t"}, "Authorization": "[redacted]"},
        "nested": [{"content": "[redacted]", "keep": 1}],
    }


def _append_many(path: str, tag: str) -> None:
    for i in range(200):
        append_apply_audit(Path(path), {"artifact_id": tag, "n": i, "status": "success"})


def test_concurrent_appends_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "apply-audit.jsonl"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(str(path), tag)) for tag in ("a", "b", "c")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    lines = read_audit(path)  # every line parses
    assert len(lines) == 600
    assert all(line["schema"] == "wp-codebox/apply-audit/v1" for line in lines)
    for tag in "abc":
        assert [x["n"] for x in lines if x["artifact_id"] == tag] == list(range(200))


def test_builtin_adapters_are_discovered_through_entry_points() -> None:
    assert {"directory", "git", "patch"} <= set(adapter_names())
    assert load_adapter("git").name == "git"
    from codebox_tui.errors import BadInputError

    with pytest.raises(BadInputError, match="unknown apply adapter"):
        load_adapter("ftp")
