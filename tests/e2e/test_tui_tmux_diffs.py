"""End to end in a real terminal (tmux, own socket): a real run on the native backend (the drawing under test is
the host's, the same for either backend; the bundle checks the backend it records) edits a tab-indented plugin and
writes a file whose content and name carry ESC sequences, a carriage return, C1/DEL and bidi overrides.
``codebox tui BUNDLE`` shows the hostile file first, then the tab-indented one; the captured screen text
is checked line by line: nothing of the previous file survives, tabs sit on their tab stops, and the
hostile bytes show as escapes (a raw ESC[2J would have cleared the pane, a raw CR overwritten a line)."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.factories.hostile_bundle import capture
from tests.factories.native import NATIVE, native_run, recorded_backend
from tests.factories.paths import REPO
from tests.factories.tmux import Tmux

pytestmark = [pytest.mark.native, pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")]


def _diff_lines(pane: str) -> list[str]:
    """The diff pane's column of each screen line (right of the file tree's border: thin, or heavy while the
    tree has the focus)."""
    return [re.split("[│┃]", line, maxsplit=1)[1] if re.search("[│┃]", line) else "" for line in pane.splitlines()]


def test_tabs_and_hostile_text_in_a_real_terminal(tmp_path: Path, tmux: Tmux, codebox_home: Path) -> None:
    runs: list[Any] = []

    def native_factory(**spec_kwargs: Any) -> Any:
        runs.append(native_run(tmp_path / "artifacts", **spec_kwargs))
        return runs[-1]

    try:
        bundle = capture(native_factory, tmp_path)
    finally:
        for run in runs:
            run.close()
    assert recorded_backend(bundle) == NATIVE
    env = {
        "CODEBOX_HOME": str(codebox_home),
        "TEXTUAL_ANIMATIONS": "none",
        "TERM": "xterm-256color",
        "COLORTERM": "truecolor",
        "PYTHONPATH": str(REPO),
        "CODEBOX_SPARE_SANDBOXES": "off",
    }
    args = [arg for key, value in env.items() for arg in ("-e", f"{key}={value}")]
    tmux.run(
        "new-session",
        "-d",
        "-s",
        "tui",
        "-x",
        "150",
        "-y",
        "32",
        *args,
        # the pytest process carries COLUMNS=80/LINES=24 (set by a plugin); the app must measure the pane
        f"env -u COLUMNS -u LINES {sys.executable} -m codebox_tui tui {bundle}; sleep 30",
    )

    # The tree's first file is the hostile one; its diff is shown first.
    tmux.wait_for(lambda text: "hunk 1/1" in text, "the review screen")
    size = tmux.run("display", "-p", "-t", "tui", "#{window_width}x#{window_height}").strip()
    assert size == "150x32", size
    pane = tmux.wait_for(lambda text: "ESC sequences" in text, "the hostile file's diff")
    assert "notes-\\x1b[31m\\u202etxt.php" in pane
    diff = _diff_lines(pane)
    expected_hostile = [
        "          1 + <?php",
        '          2 +     $clear = "\\x1b[2J\\x1b[Hscreen cleared"; // ESC sequences',
        "          3 +     echo 'visible';\\x0d",
        "  \\ No newline at end of file",
        "          4 +     echo 'overwritten';",
        '          6 +     $c1 = "\\x9b31m red via C1"; $del = "x\\x7fy";',
        '          7 +     $title = "\\x1b]0;pwned\\x07";',
    ]
    for want in expected_hostile:
        assert any(line.rstrip() == want for line in diff), f"missing line {want!r} in:\n{pane}"
    assert pane.splitlines()[0].strip().startswith("◆")  # the header is still on top: nothing cleared the pane

    # Then the tab-indented file: every line of the diff, and nothing left of the previous file.
    tmux.run("send-keys", "-t", "tui", "Down")
    pane = tmux.wait_for(lambda text: "'Howdy'" in text, "the tab-indented file's diff")
    diff = [line.rstrip() for line in _diff_lines(pane)]
    start = next(i for i, line in enumerate(diff) if line.startswith("tabbed.php") and "hunk" not in line)
    assert diff[start : start + 10] == [
        "tabbed.php",
        "  @@ -5,7 +5,7 @@",
        "    5     5",
        "    6     6   add_action( 'init', static function (): void {",
        "    7     7       if ( is_admin() ) {",
        "    8       -         $greeting = 'Hello';        // Fixture hook",
        "          8 +         $greeting = 'Howdy';        // Fixture hook",
        "    9     9           add_filter( 'the_title', static fn ( $t ) => $t . $greeting );",
        "   10    10       }",
        "   11    11   } );",
    ]
    assert all(line == "" for line in diff[start + 10 : start + 14])  # blank below: no leftovers
    assert "ESC sequences" not in pane and "overwritten" not in pane

    # A resize keeps it clean.
    tmux.run("resize-window", "-t", "tui", "-x", "110", "-y", "30")
    howdy = "          8 +         $greeting = 'Howdy';        // Fixture hook"
    pane = tmux.wait_for(lambda text: any(line.rstrip() == howdy for line in _diff_lines(text)), "the resized view")
    assert "ESC sequences" not in pane and all(len(line) <= 110 for line in pane.splitlines())
    tmux.run("send-keys", "-t", "tui", "q")
