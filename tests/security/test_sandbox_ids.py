"""Every sandbox runs as a host uid of its own when Codebox runs as root (docs/security.md, "Running as root";
issues 25 and 28; runtime/sandbox_ids.py).

When every sandbox ran as uid 65534, the ``prlimit --nproc`` cap counted all sandboxes together: sandboxes that
filled their own ``pids`` groups with a fork bomb left the others no process to start. Three real native
sandboxes are booted once: two run a fork bomb at the same moment and hold every process they got, and while
they hold them

* each bomb's processes, read from the host's ``/proc/<pid>/status`` (the sandbox's ``pids`` group lists
  them), run as one uid, the sandbox's own: not 65534, not an account's, not the other sandbox's;
* the third sandbox starts processes as if nothing happened (with the shared uid it cannot: the uid's count
  is at the cap).

Root only: as a normal user the user namespace maps every sandbox to the caller.
"""

from __future__ import annotations

import os
import pwd
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.factories.native import native_sandbox
from tests.factories.waiting import wait_until

pytestmark = [
    pytest.mark.native,
    pytest.mark.skipif(os.geteuid() != 0, reason="a host uid per sandbox exists when Codebox runs as root"),
]

# Starts sleeping children until the sandbox may start no more, says how many in /tmp/full, and holds them
# until the test writes /tmp/go (they die with the command: its PID namespace ends with it).
BOMB = r"""<?php
$procs = [];
for ($i = 0; $i < 600; $i++) {
    $p = @proc_open(['sleep', '600'], [], $pipes);
    if ($p === false) { break; }
    $procs[] = $p;
}
file_put_contents('/tmp/full', (string) count($procs));
for ($i = 0; $i < 6000 && !file_exists('/tmp/go'); $i++) { usleep(20000); }
echo count($procs);
"""
STARTS = 40  # processes the third sandbox starts while the bombs hold theirs
VICTIM = (
    "<?php $n = 0; $procs = [];"
    f" for ($i = 0; $i < {STARTS}; $i++) {{ $p = @proc_open(['sleep', '5'], [], $pipes);"
    " if ($p === false) { break; } $procs[] = $p; $n++; }"
    " foreach ($procs as $p) { proc_terminate($p, 9); proc_close($p); } echo $n;"
)


def _tmp_on_host(sandbox: Any) -> Path:
    """The host folder the sandbox sees as its ``/tmp``."""
    from codebox_tui.runtime.native import TMP

    return next(Path(bind.source) for bind in sandbox.binds if bind.target == TMP)


def _task_uids(sandbox: Any) -> set[int] | None:
    """The real, effective, saved and file-system uids of every process in the sandbox's ``pids`` group that is
    not root's (bubblewrap itself stays root until it drops), read from the host's ``/proc``; None where the
    machine gives the sandbox no group (``ProcessCap.reason``)."""
    folder = sandbox.process_cap.folder
    if folder is None:
        return None
    uids: set[int] = set()
    for pid in (folder / "cgroup.procs").read_text().split():
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        line = next(line for line in status.splitlines() if line.startswith("Uid:"))
        ids = {int(n) for n in line.split()[1:]}
        uids |= ids - {0}
    return uids


@dataclass
class Held:
    bombs: list[Any]
    full: list[int]  # processes each bomb got
    uids: list[set[int] | None]  # the host uids of each bomb's processes, while held
    victim_started: str
    victim_exit: int
    victim_errors: str
    bomb_outputs: list[str]


@pytest.fixture(scope="module")
def held() -> Iterator[Held]:
    with ExitStack() as stack:
        bombs = [stack.enter_context(native_sandbox()) for _ in range(2)]
        victim = stack.enter_context(native_sandbox())
        outputs: list[str] = ["", ""]

        def bomb(index: int) -> None:
            result = bombs[index].run_php(BOMB, 300)
            outputs[index] = f"{result.exit_code}:{result.text}:{result.errors[-500:]}"

        threads = [threading.Thread(target=bomb, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        try:
            fulls = [_tmp_on_host(sandbox) / "full" for sandbox in bombs]
            assert wait_until(lambda: all(f.exists() for f in fulls), timeout=240), outputs
            full = [int(f.read_text()) for f in fulls]
            uids = [_task_uids(sandbox) for sandbox in bombs]
            result = victim.run_php(VICTIM, 120)  # while both bombs hold every process they got
        finally:
            for sandbox in bombs:
                (_tmp_on_host(sandbox) / "go").write_text("go")
            for thread in threads:
                thread.join(timeout=300)
        yield Held(bombs, full, uids, result.text.strip(), result.exit_code, result.errors[-2000:], outputs)


def test_the_bombs_really_filled_their_sandboxes(held: Held) -> None:
    """Each bomb got processes until its sandbox could start no more (else the other tests prove nothing)."""
    from codebox_tui.runtime.native import MAX_SANDBOX_PROCESSES
    from codebox_tui.runtime.native_limits import MAX_PROCESSES

    cap = MAX_PROCESSES if held.bombs[0].process_cap.folder is not None else MAX_SANDBOX_PROCESSES
    assert all(MAX_PROCESSES // 2 < n < cap for n in held.full), (held.full, held.bomb_outputs)


def test_two_live_sandboxes_run_as_different_uids_of_their_own(held: Held) -> None:
    from codebox_tui.runtime.sandbox_ids import FIRST_ID

    first, second = held.uids
    if first is None or second is None:
        pytest.skip(f"no pids control group lists the sandbox's processes: {held.bombs[0].process_cap.reason}")
    assert len(first) == 1 and len(second) == 1, held.uids  # one uid per sandbox, as the host sees it
    assert first != second, held.uids
    for uids, sandbox in zip((first, second), held.bombs, strict=True):
        (uid,) = uids
        assert uid == sandbox.host_uid and uid >= FIRST_ID and uid != 65534, (uid, sandbox.host_uid)
        with pytest.raises(KeyError):
            pwd.getpwuid(uid)  # no account's


def test_a_fork_bomb_in_other_sandboxes_does_not_stop_a_sandbox_starting_processes(held: Held) -> None:
    """With one uid for all, the uid's process count is at its cap: the third sandbox's PHP cannot start
    (or starts a handful); with its own uid it starts every one."""
    assert held.victim_exit == 0, held.victim_errors
    assert held.victim_started == str(STARTS), (held.victim_started, held.victim_errors)
