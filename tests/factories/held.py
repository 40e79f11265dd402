"""A `codebox` command that holds a sandbox (``boot``, ``run --preview-hold``, ``recipe-run --preview-hold``,
``site open``), run as a child process the way a user runs it: its stderr read as it is written, so a test can
wait for the "preview at" line, use the held sandbox, then release the hold with a signal (never by waiting for
it to expire)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from tests.factories.paths import REPO
from tests.factories.waiting import wait_until

HELD_LINE = re.compile(r"codebox: preview at (?P<where>\S+).*\n")
EXEC_LINE = re.compile(r"codebox exec --sandbox (?P<id>runtime-[a-z0-9-]+)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def codebox_env(home: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "CODEBOX_HOME": str(home)}


def codebox(
    home: Path, *args: str, timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """One `codebox` command to its end (a run, exec on the held sandbox, review, apply, site status…), with
    ``env`` added to its environment."""
    return subprocess.run(
        [sys.executable, "-m", "codebox_tui", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env={**codebox_env(home), **(env or {})},
    )


class HeldCommand:
    """``codebox ARGS`` holding a sandbox. :meth:`wait_held` returns once it prints where the preview is."""

    def __init__(self, home: Path, *args: str) -> None:
        self.home = home
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "codebox_tui", *args],
            cwd=REPO,
            env=codebox_env(home),
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # a pytest-xdist worker ignores SIGINT, and an ignored signal stays ignored in its children
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        self.stderr = ""
        self.stdout = ""
        self._lock = threading.Lock()
        self._readers = [
            threading.Thread(target=self._read, args=(name,), daemon=True) for name in ("stderr", "stdout")
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, name: str) -> None:
        stream = getattr(self.proc, name)
        for line in stream:
            with self._lock:
                setattr(self, name, getattr(self, name) + line)

    def wait_held(self, timeout: float = 300) -> tuple[str, str]:
        """(the preview address as printed, the held sandbox's runtime id) once the command holds it."""
        wait_until(lambda: bool(EXEC_LINE.search(self.stderr)) or self.proc.poll() is not None, timeout=timeout)
        held, runtime = HELD_LINE.search(self.stderr), EXEC_LINE.search(self.stderr)
        assert held and runtime, f"the command did not hold its sandbox; stderr:\n{self.stderr}"
        return held.group("where"), runtime.group("id")

    def release(self, signum: int = signal.SIGTERM, timeout: float = 300) -> int:
        """Send ``signum`` (Ctrl-C is SIGINT) and wait for the command to capture, dispose and exit."""
        self.proc.send_signal(signum)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"the command did not end within {timeout} s of the signal:\n{self.stderr}") from None
        for reader in self._readers:
            reader.join(timeout=30)
        return code

    def wait_exit(self, timeout: float = 300) -> int:
        """Wait for the command to end on its own (e.g. after `codebox release`); its exit code."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"the command did not end within {timeout} s:\n{self.stderr}") from None
        for reader in self._readers:
            reader.join(timeout=30)
        return code

    def bundle_events(self) -> tuple[Path, list[dict[str, Any]]]:
        """The bundle the ended command named on stderr (``codebox: bundle … in DIR``) and its events."""
        captured = re.search(r"codebox: bundle \S+ in ([^;\s]+)", self.stderr)
        assert captured, self.stderr
        bundle = Path(captured.group(1))
        return bundle, [json.loads(line) for line in (bundle / "events.jsonl").read_text().splitlines()]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
