"""Hostile text from a real sandbox never reaches the terminal raw.

PHP inside a real (native) sandbox writes a file whose content and name carry ESC sequences (clear
screen, cursor home, colour, a window-title OSC), a carriage return that would overwrite the line, a C1
CSI, DEL and Unicode bidi overrides/isolates that make code read differently than it runs; it also edits
a tab-indented file. The captured bundle is opened in the Review screen (Pilot) and every line the
screen renders is checked: no raw control or bidi character in any segment, the escapes are visible,
tabs are expanded to tab stops, in unified and side-by-side view and after a resize."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.review import ReviewScreen
from tests.factories.holds import linked_home
from tests.factories.hostile_bundle import HOSTILE_NAME, capture, recorded_patch
from tests.factories.native import native_run, recorded_backend
from widgets.diff_view import DiffView

os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")

# What must never be in a rendered segment (tabs included: the terminal would jump to its own stops).
RAW = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def screen_lines(app: Any) -> list[str]:
    """Every line of the screen as rendered, after checking that no segment carries a raw control."""
    lines = []
    for strip in app.screen._compositor.render_strips():
        for segment in strip:
            if segment.control:
                continue
            assert not RAW.search(segment.text), f"raw control character reaches the terminal: {segment.text!r}"
        lines.append(strip.text)
    return lines


@pytest.fixture(scope="module")
def hostile_bundle(codebox_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One real capture of the hostile PHP for the module, on a native sandbox (the names and contents are
    PHP's, the escaping is the host's: the same for either backend): the Review screen and the CLI read the
    same bundle (neither writes to it)."""
    root = tmp_path_factory.mktemp("hostile")
    runs: list[Any] = []

    def factory(**spec_kwargs: Any) -> Any:
        runs.append(native_run(root / "artifacts", **spec_kwargs))
        return runs[-1]

    try:
        bundle = capture(factory, root)
        assert recorded_backend(bundle) == "native"
        yield bundle
    finally:
        for run in runs:
            run.close()


async def _show(pilot: Any, rel: str) -> ReviewScreen:
    screen = pilot.app.screen
    assert isinstance(screen, ReviewScreen)
    tree = screen.query_one("#files")
    assert tree.highlight_path(rel)
    await pilot.pause()
    return screen


@pytest.mark.native
async def test_hostile_names_and_contents_from_a_real_sandbox_are_drawn_as_escapes(hostile_bundle: Path) -> None:
    bundle = hostile_bundle
    patch = (bundle / "files" / "patch.diff").read_bytes().decode("utf-8")
    assert patch == recorded_patch()  # the committed recording the snapshots use is what a real run writes
    assert "\x1b[2J" in patch and "\u202e" in patch and "\r" in patch and "\t" in patch

    app = CodeboxApp(bundle)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = await _show(pilot, HOSTILE_NAME)
        view = screen.query_one(DiffView)
        view.focus()
        await pilot.pause()
        text = "\n".join(screen_lines(app))
        assert "notes-\\x1b[31m\\u202etxt.php" in text  # the name, in the tree and the diff header
        assert '$clear = "\\x1b[2J\\x1b[Hscreen cleared"; // ESC sequences' in text  # tab → next stop
        assert "echo 'visible';\\x0d" in text
        assert "/*\\u202e } \\u2066if ($isAdmin)\\u2069" in text
        assert '"\\x9b31m red via C1"' in text and '"x\\x7fy"' in text and '"\\x1b]0;pwned\\x07"' in text

        await pilot.press("w")  # soft wrap: the end of the long line continues below
        await pilot.pause()
        assert any(line.rstrip().endswith("begin admins only */") for line in screen_lines(app))
        await pilot.press("w", "s")  # side by side
        await pilot.pause()
        assert view.is_split
        assert "\\x1b[2J" in "\n".join(screen_lines(app))

        await _show(pilot, "tabbed.php")
        await pilot.resize_terminal(100, 30)
        await pilot.pause()
        assert view.is_split and "$greeting = 'Ho" in "\n".join(screen_lines(app))
        await pilot.press("s")  # unified again
        await pilot.pause()
        lines = screen_lines(app)
        added = next(line for line in lines if "'Howdy'" in line)
        # two tabs → 8 columns after the sign; the tabs before the comment → the next stops (column 28)
        code = added[added.index("+ ") + 2 :]
        assert code.startswith("        $greeting = 'Howdy';        // Fixture h"), code  # cut at the edge


@pytest.mark.native
def test_the_cli_prints_hostile_names_from_a_real_sandbox_as_escapes(hostile_bundle: Path, tmp_path: Path) -> None:
    """The same sandbox-written name through the CLI's human output (`artifacts show` / `list`, `review show`):
    a maintainer's terminal gets the escapes, never the ESC sequence or the bidi override."""
    import subprocess
    import sys

    bundle = hostile_bundle
    env = {**os.environ, "CODEBOX_HOME": str(tmp_path / "home")}

    def codebox(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "codebox_tui", *args], capture_output=True, text=True, env=env, timeout=300
        )
        assert done.returncode == 0, done.stderr[-2000:]
        for line in done.stdout.splitlines():
            assert not RAW.search(line), f"raw control character reaches the terminal: {line!r}"
        return done.stdout

    assert "notes-\\x1b[31m\\u202etxt.php" in codebox("artifacts", "show", str(bundle))
    codebox("artifacts", "list", str(bundle.parent))
    key = re.search(r"^added (@\d+) ", codebox("review", "import", str(bundle)), re.M)
    assert key is not None
    assert "notes-\\x1b[31m\\u202etxt.php" in codebox("review", "show", key.group(1))


# What a command's output may keep on a terminal: tabs and newlines; nothing else below U+0020, no C1, no bidi.
RAW_IN_OUTPUT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
HOSTILE_OUTPUT = "clear\x1b[2J\x1b[H title\x1b]0;pwned\x07 over\rwrite csi\u009b31m \u202egnp.php\tend"
SHOWN_OUTPUT = "clear\\x1b[2J\\x1b[H title\\x1b]0;pwned\\x07 over\\x0dwrite csi\\x9b31m \\u202egnp.php\tend"


@pytest.mark.native
def test_a_commands_hostile_output_from_a_real_sandbox_reaches_the_terminal_escaped(  # type: ignore[no-untyped-def]
    codebox_home: Path, tmp_path: Path
) -> None:
    """`codebox run` and `codebox exec` print what the sandbox printed: PHP echoes ESC / OSC / C1 / CR / bidi
    sequences on stdout and stderr, a sandbox file holding them is `cat` by the exec shell. The human output
    keeps tabs and newlines and shows every other unsafe character as an escape; the run's record keeps the
    exact bytes."""
    import json
    import subprocess
    import sys

    env = {**os.environ, "CODEBOX_HOME": str(linked_home(codebox_home, tmp_path))}

    def codebox(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "codebox_tui", *args, "--backend", "native", "--artifacts", str(tmp_path / "runs")],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        for stream in (done.stdout, done.stderr):
            for line in stream.splitlines():
                assert not RAW_IN_OUTPUT.search(line), f"raw control character reaches the terminal: {line!r}"
        return done

    hostile_php = (
        '"'
        + "".join(
            c if c.isalnum() or c in " .;[]" else "".join(f"\\x{b:02x}" for b in c.encode()) for c in HOSTILE_OUTPUT
        )
        + '"'
    )  # every other byte as a PHP \xNN escape
    code = f"echo {hostile_php}, \"\\n\"; file_put_contents('php://stderr', {hostile_php}); exit(3);"
    done = codebox("run", "--command", "wordpress.run-php", "--arg", f"code={code}", "--quiet")
    assert done.returncode != 0, done.stderr[-2000:]
    assert SHOWN_OUTPUT in done.stdout, done.stdout
    assert SHOWN_OUTPUT in done.stderr, done.stderr[-2000:]

    # escaping is for the terminal only: the run's record keeps the exact bytes (and so does --json)
    recorded = [
        json.loads(line)
        for bundle in (tmp_path / "runs").iterdir()
        for line in (bundle / "commands.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert recorded[-1]["stdout"].startswith(HOSTILE_OUTPUT), recorded[-1]

    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "notes.txt").write_text(HOSTILE_OUTPUT + "\n", encoding="utf-8")
    shell = codebox(
        "exec",
        "--mount",
        f"{plugin}:/wordpress/wp-content/plugins/notes:readonly",
        "cat /wordpress/wp-content/plugins/notes/notes.txt",
    )
    assert shell.returncode == 0, shell.stderr[-2000:]
    assert shell.stdout == SHOWN_OUTPUT + "\n", shell.stdout
    assert {recorded_backend(bundle) for bundle in (tmp_path / "runs").iterdir()} == {"native"}
