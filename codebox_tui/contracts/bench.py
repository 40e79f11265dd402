"""``codebox/bench/v1``: what ``wordpress.bench`` measured — timed requests against paths of a sandbox
(docs/bench.md). The bundle keeps each bench as ``files/bench.json`` (``files/bench-<n>.json`` after the first
of a run); the command prints it as a table and returns it as its JSON result. ``evaluate-patch --bench``
records the before/after comparison of two of them in its evaluation (``BenchComparison``).

Every number is measured by the host (latencies) or reported by the sandbox's PHP (peak memory): advisory
evidence, never part of a verdict.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field

from codebox_tui.contracts.common import Contract

BENCH_SCHEMA: Final = "codebox/bench/v1"


class LatencyMs(Contract):
    """Wall-clock milliseconds of the timed requests that got an answer, measured on the host around each
    request (p95: the nearest-rank 95th percentile)."""

    min: float
    median: float
    p95: float
    max: float


class BenchPath(Contract):
    path: str = Field(description="The path requested, as given (absolute, with its query string).")
    requests: int = Field(description="Timed requests made (the warm-up ones are not counted).")
    answered: int = Field(description="Timed requests that got an HTTP answer (any status).")
    statuses: dict[str, int] = Field(description="HTTP status → number of timed requests that got it.")
    errors: list[str] = Field(description="Why requests got no answer (the first few, deduplicated).")
    latencyMs: LatencyMs | None = Field(description="None when no timed request got an answer.")
    peakMemoryBytes: int | None = Field(
        description="PHP's peak memory (memory_get_peak_usage) in one more render "
        "of the path by a Codebox probe after the timed requests; None "
        "when that render reported none."
    )
    memoryError: str | None = Field(None, description="Why the peak memory is missing.")


class BenchDocument(Contract):
    schema_: Literal["codebox/bench/v1"] = Field(BENCH_SCHEMA, alias="schema")
    label: str | None = Field(None, description="The caller's name for this bench (evaluate-patch: before, after).")
    backend: str
    wordpressVersion: str | None
    phpVersion: str | None
    count: int = Field(description="Timed requests per path.")
    warmup: int = Field(description="Untimed requests per path before the timed ones.")
    concurrency: int = Field(description="Timed requests in flight at once.")
    seconds: float = Field(description="How long the whole bench took.")
    paths: list[BenchPath]

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


class BenchComparison(Contract):
    """One path timed before and after a patch in the same sandbox (evaluate-patch ``--bench``)."""

    path: str
    beforeMedianMs: float | None
    afterMedianMs: float | None
    ratio: float | None = Field(description="after / before median; None when either side has no latency.")
    beforePeakMemoryBytes: int | None
    afterPeakMemoryBytes: int | None
    regressed: bool = Field(description="ratio above the threshold: a warning, never a change of the verdict.")


class BenchRegressionCheck(Contract):
    threshold: float = Field(description="The after/before median ratio above which a path is flagged.")
    before: str = Field(description="The before side's bench document in the bundle.")
    after: str = Field(description="The after side's bench document in the bundle.")
    paths: list[BenchComparison]
    warnings: list[str] = Field(description="One line per flagged path (advisory).")
