"""TUI benchmark for issue #27: a bundle of 2,000 changed files, opened through ``app.open_bundle()`` in a
headless Textual app (animations off).

1. open: time from ``open_bundle`` to the Review screen (every file read and hashed in the Opening worker).
2. keypress -> frame in the Review screen, PageDown on the diff and j/k in the file tree: first idle, then
   while a decision (discard) verifies the whole bundle in its worker; the ratio busy/idle says whether the
   verification reaches the UI thread. Target: PageDown frame < 16 ms.
3. first paint of a 20,000-line diff vs a 10-line diff, in this run (bench_tui.first_paint); target ratio <= 1.5.

The bundle is made by the real capture code from a real folder (bench_tui.build_big_bundle's way) in a
temporary folder with its own CODEBOX_HOME, deleted afterwards.

Usage: python bench/bench_tui_large.py [--files N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

FILES = 2000


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=FILES, help=f"changed files in the bundle (default {FILES})")
    return parser.parse_args()


def build_bundle(work: Path, files: int) -> Path:
    """A real bundle: ``files`` PHP files of 30 lines under one mounted plugin, each changed in 1 line of 3."""
    from bench_tui import capture_changed_mount, changed_php

    from codebox_tui.bundle.baseline import take_baselines
    from codebox_tui.contracts.runtime import MountSpec

    source = work / "wide-plugin"
    for f in range(files):
        path = source / f"inc{f // 100:02}" / f"file{f:04}.php"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("<?php\n" + "".join(f"    $value_{i} = compute_{i}($input, {i});\n" for i in range(30)))
    mount = MountSpec(source=str(source), target="/wordpress/wp-content/plugins/wide-plugin")
    baselines = take_baselines([mount], work / "scratch")
    for path in sorted(source.rglob("*.php")):
        path.write_text(changed_php(30))
    return capture_changed_mount(work, mount, baselines, "2026-11-27T02:00:00.000Z")


async def key_frames(pilot: object, key: str, count: int, frames: list[float], still: object = None) -> list[float]:
    """``key`` ``count`` times, bench_tui.KEY_GAP apart: key -> next frame, ms (only while ``still()`` holds)."""
    from bench_tui import KEY_GAP

    out: list[float] = []
    for _ in range(count):
        if still is not None and not still():  # type: ignore[operator]
            break
        await asyncio.sleep(KEY_GAP)
        frames.clear()
        t0 = time.perf_counter()
        await pilot.press(key)  # type: ignore[attr-defined]
        while not frames and time.perf_counter() - t0 < NO_FRAME_S:
            await asyncio.sleep(0.0005)
        if frames:  # a key that changed nothing on screen (the end of the diff) paints no frame
            out.append((frames[0] - t0) * 1000)
    return out


NO_FRAME_S = 2.0


def describe(label: str, values: list[float]) -> str:
    from bench_tui import pct

    if not values:
        return f"{label}: no samples"
    return (
        f"{label}: median {statistics.median(values):.1f} ms, p90 {pct(values, 0.9):.1f}, "
        f"max {max(values):.1f} ({len(values)} keys)"
    )


async def review_bench(bundle: Path) -> None:
    import bench_tui

    from codebox_tui.app import CodeboxApp
    from codebox_tui.screens.dialogs import ConfirmDialog
    from codebox_tui.screens.review import ReviewScreen
    from widgets.diff_view import DiffView
    from widgets.file_tree import ChangedFileTree

    app = CodeboxApp()
    async with app.run_test(size=bench_tui.SIZE) as pilot:
        await pilot.pause()
        t0 = time.perf_counter()
        app.open_bundle(bundle)
        while not isinstance(app.screen, ReviewScreen):
            await asyncio.sleep(0.01)
        opened = time.perf_counter() - t0
        screen = app.screen
        print(f"open: Review shown {opened * 1000:.0f} ms after open_bundle (verification in the Opening worker)")
        await pilot.pause()
        view = screen.query_one(DiffView)
        tree = screen.query_one(ChangedFileTree)
        await pilot.press("f")  # every file in one scroll (one file is 30 lines: nothing to page through)
        view.focus()
        await pilot.pause()
        idle_page = await key_frames(pilot, "pagedown", 30, bench_tui.frames)
        tree.focus()
        await pilot.pause()
        idle_tree = await key_frames(pilot, "j", 15, bench_tui.frames) + await key_frames(
            pilot, "k", 15, bench_tui.frames
        )
        print(describe("idle PageDown key->frame", idle_page))
        print(describe("idle j/k in the tree key->frame", idle_tree))
        # a decision: the confirmation hashes in its worker, then the decision verifies every file in another
        t0 = time.perf_counter()
        await pilot.press("d")
        while not (isinstance(app.screen, ConfirmDialog) and not app.screen.verifying):
            await asyncio.sleep(0.01)
        print(f"confirmation verified {(time.perf_counter() - t0) * 1000:.0f} ms after d (digest hashed in its worker)")
        await pilot.press("y")
        deadline = time.perf_counter() + NO_FRAME_S
        while not screen.decisions.busy and time.perf_counter() < deadline:  # a small bundle may be verified already
            await asyncio.sleep(0.001)
        verifying = lambda: bool(screen.decisions.busy)  # noqa: E731
        view.focus()
        busy_page = await key_frames(pilot, "pagedown", 30, bench_tui.frames, still=verifying)
        tree.focus()
        busy_tree = await key_frames(pilot, "j", 30, bench_tui.frames, still=verifying)
        print(describe("PageDown key->frame while the decision verifies", busy_page))
        print(describe("j in the tree key->frame while the decision verifies", busy_tree))
        if busy_page and idle_page:
            print(f"ratio busy/idle PageDown median: {statistics.median(busy_page) / statistics.median(idle_page):.2f}")
        while screen.decisions.busy:
            await asyncio.sleep(0.05)


async def main(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    os.environ["TEXTUAL_ANIMATIONS"] = "none"
    import bench_tui

    with tempfile.TemporaryDirectory() as tmp_name:
        work = Path(tmp_name)
        os.environ["CODEBOX_HOME"] = str(work / "home")
        t0 = time.perf_counter()
        bundle = build_bundle(work, args.files)
        print(f"bundle: {args.files} changed files captured in {time.perf_counter() - t0:.1f} s")
        await review_bench(bundle)
    small, big = bench_tui.make_patch(1, 10), bench_tui.make_patch(1, 20000)
    await bench_tui.first_paint(small)  # warm imports and lexers
    small_runs = [await bench_tui.first_paint(small) for _ in range(5)]
    big_runs = [await bench_tui.first_paint(big) for _ in range(5)]
    s, b = statistics.median(small_runs), statistics.median(big_runs)
    print(f"first paint median: 10-line {s:.1f} ms, 20k-line {b:.1f} ms, ratio {b / s:.2f} (target <= 1.5)")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
