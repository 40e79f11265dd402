"""A tmux server on its own socket, for driving the real ``codebox tui`` in a real terminal."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable


class Tmux:
    def __init__(self, socket: str) -> None:
        self.base = ["tmux", "-L", socket, "-f", "/dev/null"]

    def run(self, *args: str) -> str:
        return subprocess.run([*self.base, *args], check=True, capture_output=True, text=True, timeout=20).stdout

    def pane(self) -> str:
        return self.run("capture-pane", "-p", "-t", "tui")

    def wait_for(self, predicate: Callable[[str], bool], what: str, timeout: float = 60.0) -> str:
        """Poll the pane until ``predicate`` holds for its text; fail with what it shows after ``timeout``."""
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.pane()
            if predicate(text):
                return text
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}; the pane shows:\n{text}")
