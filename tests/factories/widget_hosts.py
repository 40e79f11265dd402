"""Small host apps for the widget Pilot tests: each records the messages its widget posts."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult
from textual.message import Message


class Recorder(App[None]):
    """Mounts the given widgets and records every message bubbling up from them."""

    def __init__(self, *widgets: Any) -> None:
        super().__init__()
        self.animation_level = "none"
        self._widgets = widgets
        self.messages: list[Message] = []

    def compose(self) -> ComposeResult:
        yield from self._widgets

    async def _on_message(self, message: Message) -> None:  # every message that bubbles up to the app
        self.messages.append(message)
        await super()._on_message(message)

    def of(self, kind: type) -> list[Any]:
        return [m for m in self.messages if isinstance(m, kind)]


def git_patch(tmp_path: Path, files: int = 3, lines: int = 40) -> str:
    """A real `git diff` over ``files`` PHP files with a change every 10 lines."""
    repo = tmp_path / "repo"
    repo.mkdir()
    run = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True, text=True)  # noqa: E731
    run("init", "-q")
    run("config", "user.email", "t@example.com")
    run("config", "user.name", "t")
    for f in range(files):
        (repo / f"f{f}.php").write_text("<?php\n" + "".join(f"$v{i} = {i};\n" for i in range(lines)))
    run("add", "-A")
    run("commit", "-qm", "base")
    for f in range(files):
        (repo / f"f{f}.php").write_text(
            "<?php\n" + "".join(f"$v{i} = {i * 2 if i % 10 == 5 else i};\n" for i in range(lines))
        )
    return run("diff").stdout


async def wait_for(pilot: Any, condition: Any, timeout: float = 5.0) -> None:
    """Pause the pilot until ``condition()`` is true (robust under CPU load), or fail after ``timeout``."""
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await pilot.pause(0.02)
