"""The `codebox` command ends without the interpreter's teardown once its command is done (cli/__init__.py
`leave`, issue #27 item 1), yet everything a normal exit does still happens: the exit handlers and finalizers run,
the standard streams are flushed and the exit status is the command's. A caller in the process (``main(argv)``)
gets the SystemExit as before."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = """
import atexit, sys, weakref
from pathlib import Path
from codebox_tui import cli
out = Path(sys.argv[1])
atexit.register(lambda: (out / "atexit").write_text("ran"))
class Held:
    pass
held = Held()
weakref.finalize(held, lambda: (out / "finalizer").write_text("ran"))
sys.stdout.write("written before, never flushed by hand")
sys.argv = ["codebox", *sys.argv[2:]]
cli.main()
"""


def _codebox(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path), *args], capture_output=True, text=True, timeout=120
    )


def test_a_finished_command_exits_with_its_status_after_the_exit_handlers(tmp_path: Path) -> None:
    done = _codebox(tmp_path, "run", "--backend", "native", "--command", "no-such-command")
    assert done.returncode == 2, done.stderr
    assert "Unknown command 'no-such-command'" in done.stderr
    assert done.stdout.startswith("written before, never flushed by hand")
    assert (tmp_path / "atexit").read_text() == "ran" and (tmp_path / "finalizer").read_text() == "ran"


def test_success_exits_zero_with_its_output_complete(tmp_path: Path) -> None:
    done = _codebox(tmp_path, "commands", "--json")
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("}") and '"wp-codebox/command-catalog/v1"' in done.stdout
    assert (tmp_path / "atexit").read_text() == "ran" and (tmp_path / "finalizer").read_text() == "ran"


def test_a_caller_in_the_process_gets_the_system_exit() -> None:
    from codebox_tui import cli

    try:
        cli.main(["--version"])
    except SystemExit as ended:
        assert ended.code in (0, None)
    else:
        raise AssertionError("main(argv) returned without SystemExit")
