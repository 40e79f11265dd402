"""``wordpress.bench``: timed requests against paths of the sandbox (docs/bench.md).

For each path: ``warmup`` untimed requests, then ``count`` timed ones with at most ``concurrency`` in flight,
each timed on the host around the sandbox's page request; then one more render of the path by Codebox's own
probe code, which reports PHP's peak memory. The result is a ``codebox/bench/v1`` document
(codebox_tui/contracts/bench.py) kept in the bundle and printed as a table.

What the sandbox sends back is data, never trusted: statuses are read as integers, error texts are cut and
made terminal-safe by the printer, the memory figure must be a plain number in range. Both backends answer
page requests (the native one through its confined CGI requests, docs/backends.md).
"""

from __future__ import annotations

import math
import re
import secrets
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from codebox_tui.bundle import layout
from codebox_tui.contracts.bench import BenchDocument, BenchPath, LatencyMs
from codebox_tui.errors import CodeboxError
from codebox_tui.runtime.bench_args import BenchSettings, bench_settings
from codebox_tui.runtime.context import CommandContext
from codebox_tui.runtime.outcome import CommandOutcome
from codebox_tui.runtime.php_literal import php_string

MAX_ERRORS = 5
MAX_MEMORY_BYTES = 1 << 40  # anything larger is not a PHP process's peak: a forged figure


def percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of an ascending, non-empty list."""
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[rank - 1]


def latency(values_ms: list[float]) -> LatencyMs | None:
    if not values_ms:
        return None
    ordered = sorted(values_ms)
    return LatencyMs(
        min=round(ordered[0], 3),
        median=round(statistics.median(ordered), 3),
        p95=round(percentile(ordered, 0.95), 3),
        max=round(ordered[-1], 3),
    )


# One more render of the path by Codebox's probe: WordPress answers the request as its front controller would,
# the page's output is thrown away and PHP's peak memory is printed after a per-run marker.
MEMORY_PHP = r"""<?php
$codebox_bench_marker = %(marker)s;
$codebox_bench_uri = %(uri)s;
$_SERVER['REQUEST_METHOD'] = 'GET';
$_SERVER['REQUEST_URI'] = $codebox_bench_uri;
$_SERVER['QUERY_STRING'] = (string) parse_url( $codebox_bench_uri, PHP_URL_QUERY );
parse_str( $_SERVER['QUERY_STRING'], $_GET );
$_REQUEST = $_GET;
register_shutdown_function( function () use ( $codebox_bench_marker ) {
	while ( ob_get_level() > 0 ) {
		ob_end_clean();
	}
	echo "\n" . $codebox_bench_marker . ' ' . memory_get_peak_usage() . "\n";
} );
ob_start();
define( 'WP_USE_THEMES', true );
require '/wordpress/wp-blog-header.php';
"""


def peak_memory(session: CommandContext, path: str, timeout_s: float) -> tuple[int | None, str | None]:
    """PHP's peak memory for one render of ``path`` (bytes), or why there is none."""
    marker = "codebox-bench-" + secrets.token_hex(12)
    try:
        result = session.sandbox.probe_php(
            MEMORY_PHP % {"marker": php_string(marker), "uri": php_string(path)}, timeout_s
        )
    except CodeboxError as error:
        return None, f"the memory probe failed: {error.message[:300]}"
    found = re.search(re.escape(marker) + r" (\d{1,15})\n", result.text)
    if found is None:
        return None, "the memory probe printed no figure"
    value = int(found.group(1))
    if not 0 < value < MAX_MEMORY_BYTES:
        return None, "the memory probe printed a figure out of range"
    return value, None


class Budget:
    """The command's time, shared by its requests. A request starts only while the time left is at least
    ``MIN_START_S`` and three times the slowest request so far, and gets all of that time: a request that still
    times out means a hung sandbox (its sidecar is then killed), never a bench that simply ran long."""

    MIN_START_S = 30.0

    def __init__(self, timeout_s: float) -> None:
        self.deadline = time.monotonic() + timeout_s
        self.slowest_s = 0.0

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def may_start(self) -> bool:
        return self.left() >= max(self.MIN_START_S, 3 * self.slowest_s)

    def took(self, seconds: float) -> None:
        self.slowest_s = max(self.slowest_s, seconds)


OUT_OF_TIME = "not started: the command's time was running out (give it more with --timeout)"


def bench_path(session: CommandContext, path: str, settings: BenchSettings, budget: Budget) -> BenchPath:
    def one() -> tuple[float, int | None, str | None]:
        if not budget.may_start():
            return 0.0, None, OUT_OF_TIME
        started = time.perf_counter()
        try:
            status = int(session.sandbox.request(path, budget.left()).status)
        except CodeboxError as error:
            return 0.0, None, error.message[:200]
        elapsed = time.perf_counter() - started
        budget.took(elapsed)
        return elapsed * 1000.0, status, None

    for _ in range(settings.warmup):
        one()
    with ThreadPoolExecutor(max_workers=settings.concurrency, thread_name_prefix="codebox-bench") as pool:
        results = list(pool.map(lambda _: one(), range(settings.count)))
    statuses: dict[str, int] = {}
    errors: list[str] = []
    timings: list[float] = []
    for elapsed, status, error in results:
        if status is None:
            if error and error not in errors and len(errors) < MAX_ERRORS:
                errors.append(error)
            continue
        statuses[str(status)] = statuses.get(str(status), 0) + 1
        timings.append(elapsed)
    memory, memory_error = peak_memory(session, path, budget.left()) if budget.may_start() else (None, OUT_OF_TIME)
    return BenchPath(
        path=path,
        requests=len(results),
        answered=len(timings),
        statuses=dict(sorted(statuses.items())),
        errors=errors,
        latencyMs=latency(timings),
        peakMemoryBytes=memory,
        memoryError=memory_error,
    )


def run_bench(session: CommandContext, settings: BenchSettings, timeout_s: float) -> BenchDocument:
    started = time.monotonic()
    budget = Budget(timeout_s)
    sandbox = session.sandbox
    measured = [bench_path(session, path, settings, budget) for path in settings.paths]
    return BenchDocument(
        label=settings.label,
        backend=str(session.runtime_info().backend),
        wordpressVersion=sandbox.wordpress_version or None,
        phpVersion=sandbox.php_version or None,
        count=settings.count,
        warmup=settings.warmup,
        concurrency=settings.concurrency,
        seconds=round(time.monotonic() - started, 3),
        paths=measured,
    )


def _evidence_path(session: CommandContext) -> str:
    """files/bench.json for a run's first bench, files/bench-<n>.json after that."""
    if not (session.run_dir / layout.BENCH).exists():
        return layout.BENCH
    n = 2
    while (session.run_dir / layout.bench_path(n)).exists():
        n += 1
    return layout.bench_path(n)


def format_bench(document: BenchDocument) -> str:
    """The table ``codebox run`` prints (the sandbox's error texts are made terminal-safe by the caller)."""
    head = (
        f"wordpress.bench{f' ({document.label})' if document.label else ''}: {document.count} timed "
        f"request(s) per path after {document.warmup} warm-up, concurrency {document.concurrency}, "
        f"{document.seconds:.1f}s\n"
    )
    rows: list[list[str]] = [["path", "answered", "min ms", "median ms", "p95 ms", "max ms", "peak memory"]]
    for entry in document.paths:
        lat = entry.latencyMs
        cells = [f"{v:.1f}" for v in (lat.min, lat.median, lat.p95, lat.max)] if lat else ["-"] * 4
        memory = f"{entry.peakMemoryBytes / 1048576:.1f} MiB" if entry.peakMemoryBytes else "-"
        rows.append([entry.path[:60], f"{entry.answered}/{entry.requests}", *cells, memory])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row))
        for row in rows
    ]
    notes = [
        f"{e.path[:60]}: {', '.join(f'HTTP {k} x{v}' for k, v in e.statuses.items())}"
        for e in document.paths
        if set(e.statuses) - {"200"}
    ]
    notes += [f"{e.path[:60]}: {err}" for e in document.paths for err in e.errors]
    notes += [f"{e.path[:60]}: peak memory: {e.memoryError}" for e in document.paths if e.memoryError]
    return head + "\n".join(lines) + "\n" + "".join(f"  {note}\n" for note in notes)


def bench(session: CommandContext, args: dict[str, str], timeout_s: float) -> CommandOutcome:
    settings = bench_settings(args)
    document = run_bench(session, settings, timeout_s)
    rel = _evidence_path(session)
    session.add_evidence(rel, "bench", "application/json").write_text(
        document.model_dump_json(by_alias=True, indent=2) + "\n", encoding="utf-8"
    )
    answered = sum(entry.answered for entry in document.paths)
    session.emit(
        "bench.finished", {"evidence": rel, "paths": len(document.paths), "answered": answered, "label": settings.label}
    )
    stderr = "" if answered else f"no request got an answer: {'; '.join(_first_errors(document))}\n"
    data: dict[str, Any] = {**document.to_json(), "evidence": rel}
    return CommandOutcome(
        stdout=format_bench(document),
        stderr=stderr,
        exit_code=0 if answered else 1,
        json=data,
        artifact_refs=[{"path": rel, "kind": "bench"}],
    )


def _first_errors(document: BenchDocument) -> list[str]:
    return [err for entry in document.paths for err in entry.errors][:2] or ["no error recorded"]
