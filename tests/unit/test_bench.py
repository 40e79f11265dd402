"""wordpress.bench's pure parts (docs/bench.md): its arguments and caps, checked before boot; the statistics;
the table; evaluate-patch's before/after comparison. The command itself runs in
real Playground sandboxes in tests/e2e/test_recipes_evaluate_patch.py."""

from __future__ import annotations

from typing import Any

import pytest

from codebox_tui.contracts.bench import BenchDocument, BenchPath
from codebox_tui.contracts.runtime import CommandResultEnvelope, ExecutionResult
from codebox_tui.errors import BadInputError
from codebox_tui.lifecycle import CommandStep, RunRequest
from codebox_tui.lifecycle.request import check_request
from codebox_tui.recipes.evaluate_patch import BENCH_REGRESSION_RATIO, check_bench_paths, compare_benches
from codebox_tui.runtime.bench import format_bench, latency, percentile
from codebox_tui.runtime.bench_args import bench_settings
from codebox_tui.runtime.catalog import get_command, parse_args


def _settings(*raw: str) -> Any:
    return bench_settings(parse_args(get_command("wordpress.bench"), list(raw)))


def test_repeated_paths_reach_the_handler_with_the_defaults() -> None:
    settings = _settings("path=/", "path=/wp-json/?a=1", "path=/")
    assert settings.paths == ["/", "/wp-json/?a=1"]
    assert (settings.count, settings.warmup, settings.concurrency) == (10, 2, 1)
    assert _settings().paths == ["/"]


@pytest.mark.parametrize(
    ("arg", "field", "expected"),
    [
        ("path=wp-admin/", "path", "starting with '/'"),
        ("path=//evil.example/", "path", "no host"),
        ("path=/a b", "path", "no spaces"),
        ("count=0", "count", "from 1 to 200"),
        ("count=201", "count", "from 1 to 200"),
        ("warmup=51", "warmup", "from 0 to 50"),
        ("concurrency=9", "concurrency", "from 1 to 8"),
        ("concurrency=two", "concurrency", "whole number"),
        ("label=Before!", "label", "lower-case"),
    ],
)
def test_bad_arguments_name_the_argument_and_what_was_expected(arg: str, field: str, expected: str) -> None:
    with pytest.raises(BadInputError, match=expected) as caught:
        _settings(arg)
    assert caught.value.field == field


def test_too_many_paths_and_bad_arguments_are_refused_before_boot() -> None:
    paths = [f"path=/{i}" for i in range(11)]
    with pytest.raises(BadInputError, match="at most 10"):
        check_request(RunRequest(commands=[CommandStep("wordpress.bench", paths)], backend="playground"))
    with pytest.raises(BadInputError, match="count="):
        check_request(RunRequest(commands=[CommandStep("wordpress.bench", ["count=1000"])], backend="playground"))


def test_both_backends_accept_the_bench() -> None:
    """The native backend answers page requests too (docs/backends.md): the bench is not refused on either."""
    for backend in ("playground", "native"):
        check_request(RunRequest(commands=[CommandStep("wordpress.bench", ["path=/"])], backend=backend))


def test_statistics_use_the_nearest_rank() -> None:
    assert percentile([1.0], 0.95) == 1.0
    assert percentile([float(i) for i in range(1, 21)], 0.95) == 19.0
    stats = latency([5.0, 1.0, 3.0, 100.0])
    assert stats is not None and (stats.min, stats.median, stats.p95, stats.max) == (1.0, 4.0, 100.0, 100.0)
    assert latency([]) is None


def _document(label: str, medians: dict[str, float | None]) -> BenchDocument:
    paths = [
        BenchPath(
            path=path,
            requests=2,
            answered=2 if median is not None else 0,
            statuses={"200": 2},
            errors=[] if median is not None else ["Sandbox request failed"],
            latencyMs=latency([median, median]) if median is not None else None,
            peakMemoryBytes=4 << 20,
            memoryError=None,
        )
        for path, median in medians.items()
    ]
    return BenchDocument(
        label=label,
        backend="wordpress-playground",
        wordpressVersion="6.5.5",
        phpVersion="8.3",
        count=2,
        warmup=0,
        concurrency=1,
        seconds=1.0,
        paths=paths,
    )


def test_the_table_shows_every_path_and_why_one_has_no_figures() -> None:
    text = format_bench(_document("before", {"/": 12.5, "/\x1b[2J": None}))
    assert text.startswith("wordpress.bench (before): 2 timed request(s) per path after 0 warm-up")
    assert "12.5" in text and "4.0 MiB" in text and "Sandbox request failed" in text


def _execution(document: BenchDocument, evidence: str) -> ExecutionResult:
    return ExecutionResult(
        id="e",
        command="wordpress.bench",
        args=[],
        exitCode=0,
        stdout="",
        stderr="",
        startedAt="2026-01-01T00:00:00Z",
        finishedAt="2026-01-01T00:00:01Z",
        result=CommandResultEnvelope(status="ok", json={**document.to_json(), "evidence": evidence}),
    )


def test_a_slower_path_is_a_warning_and_a_missing_side_is_said() -> None:
    before = _execution(_document("before", {"/": 10.0, "/shop": 10.0}), "files/bench.json")
    after = _execution(
        _document("after", {"/": 10.5, "/shop": 10.0 * BENCH_REGRESSION_RATIO + 1}), "files/bench-2.json"
    )
    check = compare_benches(before, after)
    assert (check["before"], check["after"]) == ("files/bench.json", "files/bench-2.json")
    assert [(p["path"], p["regressed"]) for p in check["paths"]] == [("/", False), ("/shop", True)]
    assert len(check["warnings"]) == 1 and check["warnings"][0].startswith("/shop: median 10.0 ms before")
    missing = compare_benches(before, None)
    assert missing["warnings"][0] == "the bench did not run after the patch"
    assert all(p["ratio"] is None and not p["regressed"] for p in missing["paths"])


def test_evaluate_patch_bench_paths_are_checked_before_boot() -> None:
    assert check_bench_paths([]) == []
    assert check_bench_paths(["/", "/"]) == ["path=/", "count=5", "warmup=1"]
    with pytest.raises(BadInputError, match="--bench: path=") as caught:
        check_bench_paths(["shop"])
    assert caught.value.field == "--bench"
    assert check_bench_paths(["/"], 2) == ["path=/", "count=2", "warmup=1"]
    with pytest.raises(BadInputError, match="--bench-count: count='0'") as caught:
        check_bench_paths(["/"], 0)
    assert caught.value.field == "--bench-count"


def test_the_mcp_evaluate_patch_tool_refuses_a_bad_bench_path_before_boot() -> None:
    from pathlib import Path

    from codebox_tui.mcp_server.flows import evaluate_patch
    from codebox_tui.mcp_server.models import EvaluatePatchInput

    examples = Path(__file__).resolve().parents[2] / "examples"
    params = EvaluatePatchInput(
        plugin=str(examples / "plugins-for-recipes" / "buggy-counter"),
        patch=str(examples / "patches" / "buggy-counter-fix.patch"),
        bench=["shop"],
    )
    with pytest.raises(BadInputError, match="--bench: path='shop'") as caught:
        evaluate_patch(params)
    assert caught.value.field == "bench"
