"""Running Codebox as root: the sandbox does not (docs/security.md, "Running as root").

As root, bubblewrap's user namespace used to map the sandbox's uid 65534 to root on the host: PHP (and the
Playground sidecar) could write any root-owned file a writable bind showed it, and everything it created was
root's. Now the wall drops to an unprivileged uid/gid of the sandbox's own on the host (runtime/sandbox_ids.py;
a Playground sidecar's for its sandboxes). Each test performs the attack through a real
sandbox of each backend in a real run with a ``:live`` mount, the way a user would:

* PHP's euid, translated through its own ``/proc/self/uid_map`` to the host, is not 0; the Node sidecar's
  host uid (read from the host's ``/proc``) is not 0; a file PHP creates is not root's on the host;
* a file in the ``:live`` folder that its owner (root) made read-only, in a read-only folder, stays unwritten:
  PHP's ``chmod``, overwrite, unlink, rename over it and a new file beside it all fail; a writable file of the
  same folder is written (the live mount still works);
* after the run every entry of the ``:live`` folder is root's again, including the file PHP created.

Skipped when the tests do not run as root (then the user namespace maps 65534 to the caller, who is no one
special).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.runtime.sandbox_ids import FIRST_ID
from tests.factories.playground import PlaygroundSession, node_pid

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the uid drop applies when Codebox runs as root")

LIVE = "/wordpress/wp-content/plugins/live"

ATTACK = r"""<?php
$live = '__LIVE__';
$r = [];
$r['euid'] = function_exists('posix_geteuid') ? posix_geteuid() : null;
$map = @file('/proc/self/uid_map');  // native: open_basedir keeps /proc out of PHP; a child reads it
if ($map === false && is_string($m = @shell_exec('cat /proc/self/uid_map'))) { $map = [$m]; }
$r['uidMap'] = $map === false ? null : preg_split('/\s+/', trim($map[0]));
$r['chmod'] = @chmod("$live/locked/locked.txt", 0666);
$r['overwrite'] = @file_put_contents("$live/locked/locked.txt", 'owned');
$r['unlink'] = @unlink("$live/locked/locked.txt");
$r['rename'] = @rename("$live/open.txt", "$live/locked/locked.txt");
$r['plant'] = @file_put_contents("$live/locked/planted.txt", 'planted');
$r['open'] = file_put_contents("$live/open.txt", 'written by the sandbox');
$r['made'] = file_put_contents("$live/made.txt", 'made by the sandbox');
$r['madeOwner'] = fileowner("$live/made.txt");
$r['siteFile'] = file_put_contents('/wordpress/wp-content/uploads-uid-probe.txt', 'x');
echo json_encode($r);
"""


def _host_uid(uid_map: list[str] | None, euid: int | None) -> int | None:
    """PHP's effective uid as the host sees it, through the process's own uid map ('inside outside count')."""
    if uid_map is None or euid is None:
        return None
    inside, outside, count = (int(part) for part in uid_map)
    assert inside <= euid < inside + count, uid_map
    return outside + euid - inside


@pytest.fixture()
def live_folder(tmp_path: Path) -> Path:
    live = tmp_path / "live"
    (live / "locked").mkdir(parents=True)
    (live / "plugin.php").write_text("<?php\n/* Plugin Name: Live */\n")
    (live / "open.txt").write_text("original open\n")
    (live / "locked" / "locked.txt").write_text("root only\n")
    (live / "locked" / "locked.txt").chmod(0o444)
    (live / "locked").chmod(0o555)
    return live


def _attack(run: Any, live: Path) -> dict[str, Any]:
    result = run.execute("wordpress.run-php", ["code=" + ATTACK.replace("__LIVE__", LIVE)])
    assert result.exitCode == 0, result.stderr
    outcome: dict[str, Any] = json.loads(result.stdout)
    outcome["madeHostOwner"] = (live / "made.txt").stat().st_uid  # while the sandbox is up
    site_files = list(run._sandbox.work_dir.rglob("uploads-uid-probe.txt"))
    assert site_files, "the site file PHP wrote is not in the sandbox's folder"
    outcome["siteHostOwner"] = site_files[0].stat().st_uid
    return outcome


def _check(outcome: dict[str, Any], live: Path) -> None:
    assert _host_uid(outcome["uidMap"], outcome["euid"]) not in (0, None), outcome
    assert outcome["madeHostOwner"] != 0 and outcome["siteHostOwner"] != 0, outcome
    # the sandbox's own id, above every account's: the live folder was handed to the uid it runs as
    assert outcome["madeHostOwner"] == outcome["siteHostOwner"] >= FIRST_ID, outcome
    assert outcome["open"] and outcome["made"], outcome  # the live mount still writes through
    forbidden = {key: outcome[key] for key in ("chmod", "overwrite", "unlink", "rename", "plant") if outcome[key]}
    assert not forbidden, f"the sandbox wrote a root-only file or folder: {forbidden}"
    locked = live / "locked" / "locked.txt"
    assert locked.read_text() == "root only\n" and stat.S_IMODE(locked.stat().st_mode) == 0o444
    assert sorted(p.name for p in (live / "locked").iterdir()) == ["locked.txt"]
    assert (live / "open.txt").read_text() == "written by the sandbox"
    owners = {str(p.relative_to(live)): p.lstat().st_uid for p in [live, *live.rglob("*")]}
    assert set(owners.values()) == {0}, owners  # every owner back after the run, the new file's too


def test_native_php_runs_as_an_unprivileged_host_uid(tmp_path: Path, live_folder: Path) -> None:
    from codebox_tui.runtime.native import NativeBackend
    from codebox_tui.runtime.native_site import host_php
    from codebox_tui.runtime.session import RunSession
    from codebox_tui.settings import get_settings

    spec = PlaygroundSession(get_settings().home).spec(php=host_php().series, mounts=[f"{live_folder}:{LIVE}:live"])
    with RunSession(spec, tmp_path / "artifacts", backend=NativeBackend()) as run:
        outcome = _attack(run, live_folder)
        run.capture()
    _check(outcome, live_folder)


@pytest.mark.playground
def test_the_playground_sidecar_runs_as_an_unprivileged_host_uid(
    playground_session: Any, tmp_path: Path, live_folder: Path
) -> None:
    with playground_session.new_run(tmp_path / "artifacts", mounts=[f"{live_folder}:{LIVE}:live"]) as run:
        outcome = _attack(run, live_folder)
        pid = node_pid(run._sandbox.sidecar)
        status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
        run.capture()
    host_uids = {int(uid) for uid in status["Uid"].split()}
    assert 0 not in host_uids, status["Uid"]  # real, effective, saved and file-system uid, as the host sees them
    # PHP-wasm has no host uid of its own: its euid (if posix is built in) is Playground's, so the host view above
    # and the owners below are what count
    outcome["uidMap"], outcome["euid"] = ["0", "0", "4294967295"], host_uids.pop()
    _check(outcome, live_folder)
