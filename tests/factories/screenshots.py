"""Regenerate ``screenshots/`` (SVG from Textual, PNG through Debian Chromium): ``make screenshots``.

The screens are driven headless against a demo bundle captured by the real capture code from a
small plugin change, registered in a throw-away store.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codebox_tui.bundle import layout
from codebox_tui.versions import DEFAULT_PHP_VERSION

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "screenshots"
FIXED_NOW = datetime(2026, 11, 22, 12, 5, tzinfo=UTC)
FIXED_CREATED = "2026-11-22T12:00:00.000Z"

BEFORE_PLUGIN = """<?php
/**
 * Plugin Name: Greeting Cards
 */
function greeting_cards_render( $atts ) {
\t$atts = shortcode_atts( array( 'name' => 'world' ), $atts );
\treturn '<p class="card">Hello, ' . $atts['name'] . '!</p>';
}
add_shortcode( 'greeting_card', 'greeting_cards_render' );
"""
AFTER_PLUGIN = """<?php
/**
 * Plugin Name: Greeting Cards
 */
function greeting_cards_render( $atts ) {
\t$atts = shortcode_atts( array( 'name' => 'world', 'tone' => 'warm' ), $atts );
\t$name = esc_html( sanitize_text_field( $atts['name'] ) );
\treturn '<p class="card card--' . esc_attr( $atts['tone'] ) . '">Hello, ' . $name . '!</p>';
}
add_shortcode( 'greeting_card', 'greeting_cards_render' );
"""


# A tab-indented WordPress plugin, and the patch a real Playground run wrote when PHP edited it and added
# a file whose content and name carry ESC sequences, a CR, C1/DEL and bidi overrides (recorded by
# ``python -m tests.hostile_bundle``; ``tests/security/test_diffs_hostile_text.py`` checks it still matches).
PLUGIN_TARGET = "/wordpress/wp-content/plugins/tabbed"
HOSTILE_PATCH = REPO / "tests" / "fixtures" / "hostile-playground.patch"
TABBED_PLUGIN = (
    "<?php\n"
    "/**\n"
    " * Plugin Name: Tabbed\n"
    " */\n"
    "\n"
    "add_action( 'init', static function (): void {\n"
    "\tif ( is_admin() ) {\n"
    "\t\t$greeting = 'Hello';\t\t// Fixture hook\n"
    "\t\tadd_filter( 'the_title', static fn ( $t ) => $t . $greeting );\n"
    "\t}\n"
    "} );\n"
)


def make_tabbed_plugin(root: Path) -> Path:
    plugin = root / "tabbed"
    plugin.mkdir(parents=True)
    (plugin / "tabbed.php").write_text(TABBED_PLUGIN)
    return plugin


def build_hostile_bundle(work: Path) -> Path:
    """A deterministic bundle: the tab-indented plugin with the recorded patch applied exactly
    (``store.patchtext.apply_block``), captured by the real capture code with a fixed clock."""
    from codebox_tui.bundle.baseline import take_baselines
    from codebox_tui.bundle.patchparse import split_sections
    from codebox_tui.contracts.runtime import MountSpec, RuntimeInfo
    from store.patchtext import apply_block
    from tests.factories.capture import capture_plain_run

    plugin = make_tabbed_plugin(work)
    mount = MountSpec(source=str(plugin), target=PLUGIN_TARGET)
    baselines = take_baselines([mount], work / "scratch")
    for section in split_sections(HOSTILE_PATCH.read_bytes().decode("utf-8")):
        target = plugin / section.path
        before = target.read_bytes() if target.exists() else None
        target.write_bytes(apply_block(before, section.text.encode("utf-8")))
    run_dir = work / "run"
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / layout.EVENTS).write_text(
        '{"data": {"command": "wordpress.run-php"}, "id": "event-0", "level": "info", '
        '"timestamp": "2026-11-22T12:00:00.000Z", "type": "command.started"}\n'
    )
    runtime = RuntimeInfo(
        id="runtime-hostile",
        createdAt=FIXED_CREATED,
        environment={"wordpressVersion": "6.5.5", "phpVersion": DEFAULT_PHP_VERSION},
    )
    summary = capture_plain_run(run_dir, [mount], baselines, runtime)
    return Path(summary.path)


@dataclass
class DemoEvidence:
    path: str
    kind: str
    contentType: str


def draw_demo_screenshot(target: Path) -> None:
    """A small, deterministic stand-in for a browser screenshot of the demo page (the demo bundle is
    built without a browser): the greeting card the plugin renders."""
    from PIL import Image, ImageDraw

    target.parent.mkdir(parents=True, exist_ok=True)
    image = Image.new("RGB", (320, 180), "#f6f7f7")
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, 319, 22), fill="#1d2327")  # admin-bar-like strip
    draw.rectangle((8, 7, 60, 15), fill="#72aee6")
    draw.rectangle((24, 40, 296, 150), fill="#ffffff", outline="#a0522d", width=3)  # the card
    draw.rectangle((44, 62, 220, 82), fill="#a0522d")  # "Hello, world!" as a bar of warm text
    for y in (98, 112, 126):
        draw.rectangle((44, y, 276 - (y - 98) * 2, y + 6), fill="#c3c4c7")
    image.save(target, format="PNG", optimize=False)


def build_demo_bundle(work: Path) -> Path:
    """A real bundle: baseline → edits (modify, add, delete, binary) → capture."""
    from codebox_tui.bundle.baseline import take_baselines
    from codebox_tui.bundle.capture import capture_bundle
    from codebox_tui.contracts.bundle import TestCase, TestSuite
    from codebox_tui.contracts.runtime import MountSpec, RuntimeInfo, RuntimePolicy

    source = work / "greeting-cards"
    (source / "assets").mkdir(parents=True)
    (source / "greeting-cards.php").write_text(BEFORE_PLUGIN)
    (source / "readme.txt").write_text("=== Greeting Cards ===\nShows a greeting card.\n")
    (source / "assets" / "card.css").write_text(".card { color: #333; }\n")
    mount = MountSpec(source=str(source), target="/wordpress/wp-content/plugins/greeting-cards")
    baselines = take_baselines([mount], work / "scratch")
    (source / "greeting-cards.php").write_text(AFTER_PLUGIN)
    (source / "assets" / "card.css").write_text(".card { color: #333; }\n.card--warm { color: #a0522d; }\n")
    (source / "readme.txt").unlink()
    (source / "tests").mkdir()
    (source / "tests" / "test-render.php").write_text(
        "<?php\nclass RenderTest extends PHPUnit\\Framework\\TestCase {}\n"
    )
    (source / "assets" / "icon.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(64)))
    run_dir = work / "run"
    (run_dir / "logs").mkdir(parents=True)
    draw_demo_screenshot(run_dir / layout.BROWSER_DIR / "screenshot.png")
    events = [
        ("runtime.created", "info", '{"runtimeId": "runtime-demo"}'),
        ("runtime.boot-progress", "info", '{"phase": "copying-site"}'),
        ("runtime.boot-progress", "info", '{"phase": "server-started", "ms": 1412}'),
        ("runtime.ready", "info", '{"previewUrl": "http://127.0.0.1:45123", "bootMs": 3811}'),
        ("command.started", "info", '{"command": "wordpress.phpunit"}'),
        ("command.finished", "error", '{"command": "wordpress.phpunit", "exitCode": 1, "durationMs": 1210}'),
        ("artifacts.capturing", "info", "{}"),
    ]
    with open(run_dir / layout.EVENTS, "w") as handle:
        for index, (kind, level, data) in enumerate(events):
            handle.write(
                f'{{"data": {data}, "id": "event-{index}", "level": "{level}", '
                f'"timestamp": "2026-11-22T12:00:0{index}.000Z", "type": "{kind}"}}\n'
            )
    suite = TestSuite(
        name="wordpress.phpunit",
        status="failed",
        tests=3,
        passed=2,
        failed=1,
        cases=[
            TestCase(name="test_renders_name", classname="RenderTest", status="passed"),
            TestCase(name="test_escapes_html", classname="RenderTest", status="passed"),
            TestCase(
                name="test_tone_class",
                classname="RenderTest",
                status="failed",
                message="Failed asserting that '<p class=\"card card--warm\">' contains 'card--cool'.",
            ),
        ],
    )
    runtime = RuntimeInfo(
        id="runtime-demo",
        createdAt=FIXED_CREATED,
        environment={"wordpressVersion": "6.5.5", "phpVersion": DEFAULT_PHP_VERSION},
    )
    summary = capture_bundle(
        run_dir,
        runtime=runtime,
        mounts=[mount],
        baselines=baselines,
        policy=RuntimePolicy(commands=["wordpress.run-php", "wordpress.phpunit"]),
        metadata={"sandbox_session_id": "demo"},
        secret_values=[],
        evidence=[DemoEvidence(f"{layout.BROWSER_DIR}/screenshot.png", "browser-screenshot", "image/png")],
        test_suites=[suite],
    )
    return summary.path


def register_demo(bundle: Path) -> None:
    from codebox_tui.screens import data
    from codebox_tui.settings import get_settings

    store = data.open_store()
    try:
        data.register(store, bundle, run_id=None)
    finally:
        store.close()
    with sqlite3.connect(get_settings().db_path) as conn:  # a fixed age for stable pictures
        conn.execute("UPDATE bundles SET created_at = ?, updated_at = ?", (FIXED_CREATED, FIXED_CREATED))


Step = Callable[[Any, Any], Awaitable[None]]


async def _shoot(name: str, size: tuple[int, int], make_app: Callable[[], Any], steps: Step | None) -> Path:
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        if steps is not None:
            await steps(app, pilot)
        await pilot.pause()
        path = OUT / f"{name}.svg"
        app.save_screenshot(filename=path.name, path=str(OUT))
    return path


def svg_to_png(svg: Path) -> Path | None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        return None
    import re

    head = svg.read_text()[:2000]
    match = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', head)
    width, height = (int(float(match.group(1))), int(float(match.group(2)))) if match else (1200, 800)
    png = svg.with_suffix(".png")
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                f"--user-data-dir={profile}",
                "--hide-scrollbars",
                f"--window-size={width},{height}",
                f"--screenshot={png}",
                svg.as_uri(),
            ],
            capture_output=True,
            timeout=60,
        )
    return png if png.exists() else None


def shoot_evaluation(bundle: Path) -> None:
    """Review of a real ``codebox evaluate-patch`` bundle (verdict line, Tests tab with the delta):
    ``python -m tests.factories.screenshots --evaluate-bundle DIR`` (needs a bundle made with Playground,
    so ``make screenshots`` keeps the committed pictures when it is not given)."""
    from codebox_tui.app import CodeboxApp

    async def tests_tab(app: Any, pilot: Any) -> None:
        app.open_bundle(bundle)
        await pilot.pause()
        await _review_ready(pilot)
        await pilot.press("t")
        await pilot.pause()

    async def live_replay(app: Any, pilot: Any) -> None:
        from codebox_tui.screens.live_run import LiveRunScreen

        app.push_screen(LiveRunScreen(run_dir=bundle))  # the run's events as the Live screen showed them
        await pilot.pause(0.3)

    for size, suffix in (((120, 40), ""), ((80, 24), "-80x24")):
        for name, steps in (("review-evaluate-patch", tests_tab), ("live-evaluate-patch", live_replay)):
            svg = asyncio.run(_shoot(f"{name}{suffix}", size, lambda: CodeboxApp(now=FIXED_NOW), steps))
            png = svg_to_png(svg)
            print(f"{svg.relative_to(REPO)}  {png.relative_to(REPO) if png else '(no chromium: SVG only)'}")


async def evaluate_form(app: Any, pilot: Any) -> None:
    """The Evaluate form typed in (paths relative to the repository, main's working folder)."""
    from codebox_tui.screens.evaluate import EvaluatePatchScreen

    await pilot.press("e")
    for _ in range(100):
        if isinstance(app.screen, EvaluatePatchScreen):
            break
        await pilot.pause(0.05)
    # typed as a user would, from the repository's root; both a patch and a range: refused under Patch
    for field, text in (
        ("plugin", "examples/plugins-for-recipes/buggy-counter"),
        ("patch", "examples/patches/buggy-counter-fix.patch"),
        ("git", "main..fix"),
    ):
        app.screen.query_one(f"#{field}").focus()
        await pilot.pause()
        await pilot.press(*text)
    await pilot.press("enter")
    await pilot.pause(0.3)


async def reproduce_form(app: Any, pilot: Any) -> None:
    from codebox_tui.screens.evaluate import ReproduceScreen

    await pilot.press("R")
    for _ in range(100):
        if isinstance(app.screen, ReproduceScreen):
            break
        await pilot.pause(0.05)
    app.screen.query_one("#recipe").focus()
    await pilot.pause()
    await pilot.press(*"examples/recipes/bug-reproduction.json")
    await pilot.pause(0.3)


async def _review_ready(pilot: Any) -> None:
    """Opening a bundle verifies it in a worker first (screens/opening.py): wait for the Review screen."""
    from codebox_tui.screens.review import ReviewScreen

    for _ in range(2400):
        if isinstance(pilot.app.screen, ReviewScreen) and pilot.app.screen.is_mounted:
            break
        await pilot.pause(0.05)
    await pilot.pause()


def _wanted(name: str) -> bool:
    """``--only NAME,NAME``: just those shots (e.g. a new screen's); the other pictures are kept as they are."""
    return "--only" not in sys.argv or name in sys.argv[sys.argv.index("--only") + 1].split(",")


def main() -> int:
    if "--evaluate-bundle" in sys.argv:
        bundle = Path(sys.argv[sys.argv.index("--evaluate-bundle") + 1]).resolve()
        with tempfile.TemporaryDirectory(prefix="codebox-shots-") as tmp:
            os.environ["CODEBOX_HOME"] = str(Path(tmp) / "home")
            os.environ["TEXTUAL_ANIMATIONS"] = "none"
            from codebox_tui.settings import reload_settings

            reload_settings()
            shoot_evaluation(bundle)
        return 0
    os.chdir(REPO)  # the forms' shots type paths of examples/ relative to the repository
    with tempfile.TemporaryDirectory(prefix="codebox-shots-") as tmp:
        work = Path(tmp)
        os.environ["CODEBOX_HOME"] = str(work / "home")
        os.environ["TEXTUAL_ANIMATIONS"] = "none"
        os.environ["CODEBOX_IMAGES"] = "halfcell"  # deterministic inline images (no terminal query)
        from codebox_tui.settings import reload_settings

        reload_settings()
        bundle = build_demo_bundle(work)
        register_demo(bundle)
        from codebox_tui.app import CodeboxApp

        def DemoApp() -> Any:
            return CodeboxApp(now=FIXED_NOW)

        async def open_review(app: Any, pilot: Any) -> None:
            app.open_bundle(bundle)
            await pilot.pause()
            await _review_ready(pilot)
            tree = app.screen.query_one("#files")
            tree.highlight_path("greeting-cards.php")
            await pilot.pause()

        async def review_tests(app: Any, pilot: Any) -> None:
            await open_review(app, pilot)
            app.screen.query_one("#tabs").active = "tab-tests"

        async def review_events(app: Any, pilot: Any) -> None:
            await open_review(app, pilot)
            app.screen.query_one("#tabs").active = "tab-events"
            await pilot.pause(0.3)

        async def review_evidence(app: Any, pilot: Any) -> None:
            await open_review(app, pilot)
            app.screen.query_one("#tabs").active = "tab-evidence"
            await pilot.pause(0.3)

        async def confirm(app: Any, pilot: Any) -> None:
            await open_review(app, pilot)
            await pilot.press("space", "A")

        async def launch(app: Any, pilot: Any) -> None:
            await pilot.press("n")

        async def help_panel(app: Any, pilot: Any) -> None:
            await open_review(app, pilot)
            await pilot.press("f1")

        async def live(app: Any, pilot: Any) -> None:
            from codebox_tui.screens.live_run import LiveRunScreen

            app.push_screen(LiveRunScreen(run_dir=bundle))
            await pilot.pause(0.3)

        async def review_comment(app: Any, pilot: Any) -> None:
            await open_review(app, pilot)
            app.screen.query_one("#diff").focus()
            await pilot.press(*["J"] * 8, "c")
            await pilot.pause()
            for char in "Escape the card name before printing it":
                await pilot.press("space" if char == " " else char)
            await pilot.press("enter")
            await pilot.pause(0.3)

        async def review_hunks(app: Any, pilot: Any) -> None:
            await open_review(app, pilot)
            app.screen.query_one("#diff").focus()
            await pilot.press(*["J"] * 3, "h")
            await pilot.pause(0.3)

        async def review_all_files(app: Any, pilot: Any) -> None:
            await open_review(app, pilot)
            app.screen.query_one("#diff").focus()
            await pilot.press("f")  # every file in one scroll; card.css was viewed first, so it is collapsed
            await pilot.pause(0.3)

        OUT.mkdir(exist_ok=True)

        async def batches(app: Any, pilot: Any) -> None:
            from codebox_tui.screens.batch import BatchScreen
            from codebox_tui.screens.data import open_store
            from store.batches import create_batch, list_batches, update_item

            store = open_store()
            try:
                if not list_batches(store):
                    create_batch(
                        store,
                        "batch-demo",
                        kind="fan-out",
                        source='replace "Hello" with "Howdy"',
                        items=[(f"candidate-{n}", "agent-task", "demo") for n in range(1, 5)],
                    )
                    key = store.list_bundles()[0].key
                    update_item(
                        store,
                        "batch-demo",
                        "candidate-1",
                        state="completed",
                        attempts=1,
                        verdict="completed",
                        bundle_key=key,
                    )
                    update_item(
                        store,
                        "batch-demo",
                        "candidate-2",
                        state="running",
                        attempts=2,
                        phase="step 1: wp-codebox.agent",
                    )
                    update_item(
                        store,
                        "batch-demo",
                        "candidate-3",
                        state="failed",
                        attempts=1,
                        verdict="failed",
                        error="the agent exited 1",
                    )
            finally:
                store.close()
            screen = BatchScreen("batch-demo")
            app.push_screen(screen)
            for _ in range(100):
                await pilot.pause(0.05)
                if len(screen.items) == 4:
                    break

        shots: list[tuple[str, Step | None]] = [
            ("home", None),
            ("review-diff", open_review),
            ("review-tests", review_tests),
            ("review-events", review_events),
            ("review-evidence", review_evidence),
            ("decide-confirm", confirm),
            ("launch", launch),
            ("evaluate-form", evaluate_form),
            ("reproduce-form", reproduce_form),
            ("help", help_panel),
            ("live-run", live),
            ("review-all-files", review_all_files),  # before the comment shots store their comments
            ("review-comment", review_comment),
            ("review-hunks", review_hunks),
            ("batches", batches),  # last: its batch makes the demo bundle a candidate on Home
        ]
        hostile = build_hostile_bundle(work / "hostile")

        def hostile_review(rel: str, *keys: str) -> Step:
            async def steps(app: Any, pilot: Any) -> None:
                app.open_bundle(hostile)
                await pilot.pause()
                await _review_ready(pilot)
                tree = app.screen.query_one("#files")
                tree.highlight_path(rel)
                await pilot.pause()
                app.screen.query_one("#diff").focus()
                for key in keys:
                    await pilot.press(key)
                await pilot.pause()

            return steps

        hostile_name = next(
            iter(sorted(p.name for p in (work / "hostile" / "tabbed").iterdir() if p.name != "tabbed.php"))
        )
        hostile_shots = (
            ("review-control-characters", (120, 32), hostile_review(hostile_name)),
            ("review-tabs-searched", (120, 32), hostile_review("tabbed.php", "slash", *"greeting", "enter")),
        )
        for name, size, hostile_steps in filter(lambda shot: _wanted(shot[0]), hostile_shots):
            svg = asyncio.run(_shoot(name, size, DemoApp, hostile_steps))
            png = svg_to_png(svg)
            print(f"{svg.relative_to(REPO)}  {png.relative_to(REPO) if png else '(no chromium: SVG only)'}")
        for name, steps in filter(lambda shot: _wanted(shot[0]), shots):
            for size in ((120, 40), (80, 24)):
                suffix = "" if size == (120, 40) else "-80x24"
                svg = asyncio.run(_shoot(name + suffix, size, DemoApp, steps))
                png = svg_to_png(svg)
                note = f"  {png.relative_to(REPO)}" if png else "  (no chromium: SVG only)"
                print(f"{svg.relative_to(REPO)}{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
