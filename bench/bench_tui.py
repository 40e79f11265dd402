"""TUI widget benchmarks for issue #5 (headless, Textual run_test, animations off).

1. first paint: review-style flow (split the patch, show the first file) for a 10-line patch and for a
   20,000-line patch over 200 files; target: big <= 1.5x small.
2. page scroll: time to build and return every visible line of a fresh page (cold strip cache, PHP
   highlighting on) in a 20,000-line single-file diff, and key->frame for PageDown; target < 16 ms.
3. tail latency: a writer thread appends events to a live events.jsonl; time from the write to the
   widget having the line and the next frame; target < 150 ms.
4. a 1 GB events.jsonl (generated in a temp dir, deleted after) opens as fast as a small one.

Usage: python bench/bench_tui.py [--skip-1gb] [--search-only] [--frames-only] [--skip-review]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

os.environ["TEXTUAL_ANIMATIONS"] = "none"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from textual.app import App, ComposeResult
from textual.screen import Screen

from widgets.diff_model import split_patch
from widgets.diff_view import DiffView
from widgets.event_tail import EventTail

if TYPE_CHECKING:
    from codebox_tui.bundle.baseline import Baseline
    from codebox_tui.contracts.runtime import MountSpec

SIZE = (160, 45)


def make_patch(files: int, lines_per_file: int) -> str:
    """A git-style patch: ``files`` PHP files, each hunk changing 1 in 3 lines."""
    out: list[str] = []
    for f in range(files):
        path = f"wp-content/plugins/p{f // 20}/inc/file{f:03}.php"
        out.append(f"diff --git a/{path} b/{path}\nindex 0000001..0000002 100644\n--- a/{path}\n+++ b/{path}\n")
        body: list[str] = []
        old = new = 0
        for i in range(lines_per_file):
            if len(body) >= lines_per_file:
                break
            if i % 3 == 1:
                body.append(f"-    $value_{i} = compute_{i}($input, {i});\n")
                body.append(f"+    $value_{i} = compute_{i}($input, {i * 2}, true);\n")
                old += 1
                new += 1
            else:
                body.append(f"     echo esc_html( $value_{i} ); // line {i}\n")
                old += 1
                new += 1
        out.append(f"@@ -1,{old} +1,{new} @@ function f{f}()\n")
        out.extend(body)
    return "".join(out)


frames: list[float] = []
updates: list[float] = []  # ms of work per screen update (layout + compositor), the UI's own cost of a frame
_orig_refresh = Screen._compositor_refresh
_orig_update = Screen._on_timer_update
KEY_GAP = 0.03  # s between key presses (30 Hz, like terminal key repeat)


def _timed_refresh(self: Screen) -> None:  # type: ignore[type-arg]
    _orig_refresh(self)
    frames.append(time.perf_counter())


def _timed_update(self: Screen) -> None:  # type: ignore[type-arg]
    t0 = time.perf_counter()
    _orig_update(self)
    updates.append((time.perf_counter() - t0) * 1000)


full_gcs: list[float] = []  # CPU ms of each full (generation 2) collection while measuring
_gc_started: list[float] = []
gc_measuring = False


def _gc_callback(phase: str, info: dict[str, int]) -> None:
    if info["generation"] != 2 or not gc_measuring:
        return
    if phase == "start":
        _gc_started[:] = [time.thread_time()]
    elif _gc_started:
        full_gcs.append((time.thread_time() - _gc_started.pop()) * 1000)


gc.callbacks.append(_gc_callback)
Screen._compositor_refresh = _timed_refresh  # type: ignore[method-assign]
Screen._on_timer_update = _timed_update  # type: ignore[method-assign]


class DiffHost(App[None]):
    """A DiffView alone, showing a patch's first file (or every file, ``continuous``). The patch is split into
    files when the host is made, as the Review screen gets its files' blocks from the Opening worker."""

    def __init__(self, patch: str, split_mode: str = "unified") -> None:
        super().__init__()
        self.animation_level = "none"
        self.blocks = split_patch(patch)
        self.split_mode = split_mode

    def compose(self) -> ComposeResult:
        yield DiffView(id="diff")

    def on_mount(self) -> None:
        blocks = self.blocks
        first = next(iter(blocks))
        view = self.query_one(DiffView)
        view.split_mode = self.split_mode
        if self.split_mode == "continuous":  # every file in one scroll (the Review screen's `f`)
            view.split_mode = "unified"
            view.show_files(list(blocks.items()))
        else:
            view.show_file(first, blocks[first])
        view.focus()


async def first_paint(patch: str) -> float:
    """ms from starting a DiffView app on the patch's first file to the frame that first shows its diff (or
    the "Parsing…" message of a big file); splitting the patch into files is not counted (see DiffHost)."""
    app = DiffHost(patch)
    frames.clear()
    start = time.perf_counter()
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(DiffView)
        while view.model is None or not view.built_lines:  # the diff (or its "Parsing…" message) drawn
            await asyncio.sleep(0.001)
        await pilot.pause()
        painted = next((t for t in frames if t > start), time.perf_counter())
        # the first frame after strips were built
        return (painted - start) * 1000


def _page_builds(view: DiffView, pages: int) -> list[float]:
    """ms to draw each of ``pages`` fresh pages through the frame path (``render_lines``), the widget's built
    lines and Textual's per-widget line cache both cleared first."""
    from textual.geometry import Region

    region = Region(0, 0, view.size.width, view.size.height)
    view._schedule_prefetch = lambda: None  # type: ignore[method-assign]  # nothing built ahead
    out = []
    for _ in range(pages):
        view.scroll_to(y=view.scroll_offset.y + view.size.height, animate=False, immediate=True)
        view._lines.clear()  # cold: every line of the page built again
        view._styles_cache.clear()
        t0 = time.thread_time()
        view.render_lines(region)
        out.append((time.thread_time() - t0) * 1000)
    del view._schedule_prefetch
    return out


async def press_pages(pilot: object, count: int) -> tuple[list[float], list[float]]:
    """PageDown ``count`` times, KEY_GAP apart: (key->frame ms, update work ms of that frame).

    Keys are spaced so Textual's 60 fps cap (a frame waits for the 16.7 ms tick after the previous
    one) does not count; a key pressed sooner after a frame waits for that tick."""
    key_frame: list[float] = []
    work: list[float] = []
    for _ in range(count):
        await asyncio.sleep(KEY_GAP)
        frames.clear()
        updates.clear()
        t0 = time.perf_counter()
        await pilot.press("pagedown")  # type: ignore[attr-defined]
        while not frames:
            await asyncio.sleep(0.0005)
        key_frame.append((frames[0] - t0) * 1000)
        work.append(updates[0] if updates else float("nan"))
    return key_frame, work


async def scrolling(patch: str, split_mode: str) -> tuple[list[float], list[float], list[float], float, list[float]]:
    global gc_measuring
    app = DiffHost(patch, split_mode)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(DiffView)
        t0 = time.perf_counter()
        while len(view.rows) < 1000:  # parsed in a worker
            await asyncio.sleep(0.005)
        parse_ms = (time.perf_counter() - t0) * 1000
        await pilot.pause()
        cold = _page_builds(view, 40)  # the highlight worker is still lexing
        while any(w.group == "diff-highlight" and w.is_running for w in app.workers):
            await asyncio.sleep(0.05)
        lexed = _page_builds(view, 40)  # tokens ready, strips cold
        view.scroll_home(animate=False, immediate=True)
        await pilot.pause()
        full_gcs.clear()
        gc_measuring = True
        key_frame, work = await press_pages(pilot, 40)
        gc_measuring = False
    return cold, lexed, key_frame, parse_ms, work


async def search_and_wrap(patch: str, mode: str = "unified") -> tuple[list[float], float]:
    """``DiffView.search`` over a 20k-line diff (ms per query, target < 50) and the soft-wrap layout (ms);
    ``mode`` ``continuous`` shows every file of the patch in one scroll."""
    app = DiffHost(patch, mode)
    async with app.run_test(size=SIZE) as pilot:
        view = app.query_one(DiffView)
        while len(view.rows) < 1000:  # parsed in a worker
            await asyncio.sleep(0.005)
        await pilot.pause()
        times = []
        for query in ("compute_19999", "esc_html", "no such text", "$value_7 ", "TRUE"):
            t0 = time.perf_counter()
            view.search(query)
            times.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        view.action_toggle_wrap()
        wrap_ms = (time.perf_counter() - t0) * 1000
    return times, wrap_ms


async def search_bench(one_file: str, big: str) -> None:
    """Search in one 20k-line file, and in the continuous view of 200 files of 100 lines (20k lines)."""
    searches, wrap_ms = await search_and_wrap(one_file)
    print(
        f"search in the 20k-line file: median {statistics.median(searches):.1f} ms, max {max(searches):.1f} "
        f"(target < 50); soft-wrap layout {wrap_ms:.1f} ms"
    )
    searches, wrap_ms = await search_and_wrap(big, "continuous")
    print(
        f"search in the continuous view of {len(split_patch(big))} files ({big.count(chr(10))} patch lines): "
        f"median {statistics.median(searches):.1f} ms, max {max(searches):.1f} (target < 50); soft-wrap layout "
        f"{wrap_ms:.1f} ms"
    )


def build_big_bundle(work: Path, lines: int = 20000) -> Path:
    """A real bundle (real capture code) whose patch changes 1 in 3 lines of one 20,000-line PHP file."""
    from codebox_tui.bundle.baseline import take_baselines
    from codebox_tui.contracts.runtime import MountSpec

    os.environ["CODEBOX_HOME"] = str(work / "home")
    source = work / "big-plugin"
    source.mkdir(parents=True)
    (source / "big.php").write_text(
        "<?php\n" + "".join(f"    $value_{i} = compute_{i}($input, {i});\n" for i in range(lines))
    )
    mount = MountSpec(source=str(source), target="/wordpress/wp-content/plugins/big-plugin")
    baselines = take_baselines([mount], work / "scratch")
    (source / "big.php").write_text(changed_php(lines))
    return capture_changed_mount(work, mount, baselines, "2026-11-22T12:00:00.000Z")


def changed_php(lines: int) -> str:
    """The bench bundles' PHP file of ``lines`` lines after the change: 1 line in 3 changed."""
    return "<?php\n" + "".join(
        f"    $value_{i} = compute_{i}($input, {i * 2}, true);\n"
        if i % 3 == 1
        else f"    $value_{i} = compute_{i}($input, {i});\n"
        for i in range(lines)
    )


def capture_changed_mount(work: Path, mount: MountSpec, baselines: list[Baseline], created_at: str) -> Path:
    """The bundle the real capture code makes of ``mount`` changed since ``baselines``, as a run of one
    ``wordpress.run-php`` with no events, evidence or tests would leave it (its run folder: ``work/run``)."""
    from codebox_tui.contracts.runtime import RuntimeInfo
    from tests.factories.capture import capture_plain_run

    run_dir = work / "run"
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / "events.jsonl").write_text("")
    runtime = RuntimeInfo(id="bench", createdAt=created_at, environment={})
    return capture_plain_run(run_dir, [mount], baselines, runtime).path


async def review_scrolling(bundle: Path, split_mode: str, prefetch: bool) -> tuple[list[float], list[float]]:
    """PageDown in the real Review screen (file tree, tabs, decision bar, header, footer around the diff)."""
    from codebox_tui.app import CodeboxApp

    app = CodeboxApp()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.open_bundle(bundle)
        await pilot.pause()
        view = app.screen.query_one(DiffView)
        while len(view.rows) < 1000:
            await asyncio.sleep(0.01)
        if not prefetch:
            view._schedule_prefetch = lambda: None  # type: ignore[method-assign]
        view.set_split_mode(split_mode)
        view.focus()
        while any(w.group == "diff-highlight" and w.is_running for w in app.workers):
            await asyncio.sleep(0.05)
        await pilot.pause()
        return await press_pages(pilot, 40)


class TailHost(App[None]):
    def __init__(self, path: Path) -> None:
        super().__init__()
        self.animation_level = "none"
        self.path = path
        self.seen: dict[int, float] = {}

    def compose(self) -> ComposeResult:
        yield EventTail(self.path, id="tail")


async def tail_latency(tmp: Path, count: int = 60) -> list[float]:
    path = tmp / "events.jsonl"
    path.write_text("")
    stamps: dict[int, float] = {}
    app = TailHost(path)
    latencies: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        tail = app.query_one(EventTail)
        await pilot.pause()

        def writer() -> None:
            with open(path, "a", encoding="utf-8") as handle:
                for i in range(count):
                    line = (
                        json.dumps(
                            {
                                "id": f"e{i}",
                                "type": "command.output",
                                "timestamp": "",
                                "level": "info",
                                "data": {"command": f"c{i}"},
                            }
                        )
                        + "\n"
                    )
                    stamps[i] = time.perf_counter()
                    handle.write(line)
                    handle.flush()
                    time.sleep(0.05)

        thread = threading.Thread(target=writer)
        thread.start()
        shown = 0
        while shown < count:
            if tail.total > shown:
                frames.clear()
                while not frames:  # the next frame puts it on screen
                    await asyncio.sleep(0.0005)
                for i in range(shown, tail.total):
                    latencies.append((frames[0] - stamps[i]) * 1000)
                shown = tail.total
            await asyncio.sleep(0.001)
        thread.join()
    return latencies


def write_events(path: Path, target_bytes: int) -> int:
    line = (
        json.dumps(
            {
                "id": "e",
                "type": "command.output",
                "timestamp": "2026-11-23T00:00:00.000Z",
                "level": "info",
                "data": {"command": "wp.cli", "message": "x" * 120},
            }
        )
        + "\n"
    ).encode()
    block = line * max(1, (8 << 20) // len(line))
    written = 0
    with open(path, "wb") as handle:
        while written < target_bytes:
            handle.write(block)
            written += len(block)
    return written


async def tail_open(path: Path) -> tuple[float, float, float]:
    """(ms to first painted lines, longest UI-thread step taking in indexed lines in ms, ms until the
    worker thread had indexed the whole file)."""
    frames.clear()
    start = time.perf_counter()
    app = TailHost(path)
    steps: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        tail = app.query_one(EventTail)
        original = tail.poll

        def timed_poll() -> None:
            t0 = time.perf_counter()
            original()
            steps.append((time.perf_counter() - t0) * 1000)

        tail.poll = timed_poll  # type: ignore[method-assign]
        while not tail.total:
            await asyncio.sleep(0.001)
        frames.clear()
        while not frames:
            await asyncio.sleep(0.0005)
        painted = (frames[0] - start) * 1000
        while tail.indexing or tail.index.read_to == 0:
            await asyncio.sleep(0.01)
        indexed = (time.perf_counter() - start) * 1000
        await pilot.pause(0.2)
    return painted, max(steps, default=0.0), indexed


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-1gb", action="store_true", help="leave out the 1 GB events.jsonl row")
    parser.add_argument("--search-only", action="store_true", help="run only the search rows")
    parser.add_argument(
        "--frames-only",
        action="store_true",
        help="run only the frame rows: first paint and PageDown (DiffView alone and the Review screen)",
    )
    parser.add_argument("--skip-review", action="store_true", help="leave out the Review screen's PageDown rows")
    return parser.parse_args()


async def main(args: argparse.Namespace) -> None:
    small = make_patch(1, 10)
    big = make_patch(200, 100)
    if args.search_only:
        await search_bench(make_patch(1, 20000), big)
        return
    print(
        f"patches: small {small.count(chr(10))} lines, big {big.count(chr(10))} lines / {len(split_patch(big))} files"
    )
    await first_paint(small)  # warm imports, pygments lexers
    small_runs = [await first_paint(small) for _ in range(5)]
    big_runs = [await first_paint(big) for _ in range(5)]
    s, b = statistics.median(small_runs), statistics.median(big_runs)
    print(f"first paint median: 10-line {s:.1f} ms, 20k-line/200 files {b:.1f} ms, ratio {b / s:.2f} (target <= 1.5)")

    one_file = make_patch(1, 20000)
    for mode in ("unified", "split"):
        cold, lexed, key_frame, parse_ms, work = await scrolling(one_file, mode)
        print(f"[{mode}] 20k-line single file: parsed in a worker, view filled after {parse_ms:.0f} ms")
        for label, values in (("while lexing in background", cold), ("after lexing", lexed)):
            print(
                f"[{mode}] page build, cold strips ({SIZE[1]} rows, {label}; CPU ms of the UI thread): median "
                f"{statistics.median(values):.1f} ms, p90 {pct(values, 0.9):.1f}, max {max(values):.1f} (target < 16)"
            )
        print(
            f"[{mode}] PageDown key->frame: median {statistics.median(key_frame):.1f} ms, "
            f"p90 {pct(key_frame, 0.9):.1f}, max {max(key_frame):.1f}; update work per frame median "
            f"{statistics.median(work):.1f} ms"
        )
        print(
            f"[{mode}] full GC passes while paging: {len(full_gcs)}, longest {max(full_gcs, default=0):.1f} ms CPU "
            f"(the widget never freezes the GC; its rows, lexed pieces and strip cache keep tracked objects few)"
        )
    if not args.frames_only:
        await search_bench(one_file, big)
    with tempfile.TemporaryDirectory() as tmp_name:
        bundle = build_big_bundle(Path(tmp_name))
        for mode in () if args.skip_review else ("unified", "split"):
            for prefetch in (True, False):
                key_frame, work = await review_scrolling(bundle, mode, prefetch)
                print(
                    f"[review screen, {mode}, prefetch {'on' if prefetch else 'off'}] PageDown key->frame: "
                    f"median {statistics.median(key_frame):.1f} ms, p90 {pct(key_frame, 0.9):.1f}, "
                    f"max {max(key_frame):.1f}; update work per frame median {statistics.median(work):.1f} ms "
                    "(target < 16)"
                )
    if args.frames_only:
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        return

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        lat = await tail_latency(tmp)
        print(
            f"tail append->frame ({len(lat)} events, 50 ms poll): median {statistics.median(lat):.0f} ms, "
            f"p95 {pct(lat, 0.95):.0f}, max {max(lat):.0f} (target < 150)"
        )
        if not args.skip_1gb:
            small_file = tmp / "small.jsonl"
            write_events(small_file, 20_000)
            huge = tmp / "huge.jsonl"
            t0 = time.perf_counter()
            size = write_events(huge, 1 << 30)
            print(f"generated {size / (1 << 30):.2f} GiB in {time.perf_counter() - t0:.1f} s")
            await tail_open(small_file)
            small_open = [await tail_open(small_file) for _ in range(3)]
            huge_open = [await tail_open(huge) for _ in range(3)]
            print(
                "events open, first lines painted: small "
                f"{statistics.median(x[0] for x in small_open):.0f} ms, 1 GiB "
                f"{statistics.median(x[0] for x in huge_open):.0f} ms; indexing runs in a worker thread "
                f"(whole 1 GiB indexed after {statistics.median(x[2] for x in huge_open):.0f} ms); longest UI-thread "
                f"step taking in indexed lines {max(x[1] for x in huge_open):.1f} ms"
            )
            huge.unlink()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
