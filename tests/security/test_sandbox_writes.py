"""What a sandbox may write (docs/security.md, "What a sandbox may write"), attacked for real.

All on Playground: the guard is its sidecar's writeguard.mjs and the budget counts its ``/internal``; the native
backend's disk budget (a tmpfs per sandbox) is attacked in tests/security/test_native_wall.py.

PHP inside a real Playground sandbox tries to make setuid, setgid and sticky files and folders in a
copy-on-write mount, a ``:live`` mount and the site itself: no host file may carry any of those bits
(checked with ``os.lstat`` on the real host paths while the sandbox is up) and the captured modes have
none; in the same run (one boot for three tests), bits set behind the guard's back are stripped after it, and, as
its last command, PHP writes 160 MiB into the ``:live`` mount under a 64 MiB write budget (which also counts the
compiled scripts PHP caches under ``/internal``): the write fails inside PHP, the host file holds at most the
budget, the command fails and the run is flagged ``write-budget-exceeded`` in review.json and the events; the same
flood into Playground's ``/internal`` (a host temp folder of Playground's, outside the sandbox's folder) is stopped
and flagged the same way, in a run of its own (a budget once spent would stop any later write at once).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.playground

SPECIAL = stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX
COW = "/wordpress/wp-content/plugins/cow"
LIVE = "/wordpress/wp-content/plugins/live"
SITE = "/wordpress/wp-content/uploads/codebox-modes"

MODES_ATTACK = r"""<?php
$r = [];
foreach (__DIRS__ as $d) {
    @mkdir($d, 0777, true);
    file_put_contents("$d/suid.php", "<?php echo 1;\n");
    $r["$d/suid.php"] = chmod("$d/suid.php", 04755);
    file_put_contents("$d/sgid.php", "<?php echo 1;\n");
    $r["$d/sgid.php"] = chmod("$d/sgid.php", 02755);
    $r["$d/sgid-dir"] = mkdir("$d/sgid-dir", 02775);
    @mkdir("$d/sticky");
    $r["$d/sticky"] = chmod("$d/sticky", 01777);
    $f = fopen("$d/made.txt", 'x'); fclose($f);
    $r["$d/made.txt"] = chmod("$d/made.txt", 06777);
}
echo json_encode($r);
"""
NAMES = ("suid.php", "sgid.php", "sgid-dir", "sticky", "made.txt")


def _special(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode) & SPECIAL


def _site_copy(work_dir: Path, name: str) -> Path:
    """The host path of ``SITE/name`` in the sandbox's private site folder."""
    for directory, dirs, files in os.walk(work_dir):
        if Path(directory).name == Path(SITE).name and name in (*dirs, *files):
            return Path(directory) / name
    raise AssertionError(f"{SITE}/{name} not found under {work_dir}")


@pytest.fixture(scope="module")
def special_bits_run(playground_session: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One Playground run with a copy-on-write and a ``:live`` mount, under a 64 MiB write budget, that three tests
    below check (a boot and a sidecar each only repeated it): PHP tries to make setuid, setgid and sticky files and
    folders (the host paths' bits are read while the sandbox is up); then it writes ``tool.php`` into both mounts;
    last, PHP floods the ``:live`` mount (``FLOOD``), the host sets a setuid bit on each ``tool.php`` (standing in
    for a guard that failed) beside the user's own setgid folder ``shared``, and the run is captured."""
    from codebox_tui.settings import reload_settings

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CODEBOX_SANDBOX_WRITE_BUDGET", "64M")
        budget = reload_settings().sandbox_write_budget
        yield {**_special_bits_and_flood(playground_session, tmp_path_factory), "budget": budget}
    reload_settings()


def _special_bits_and_flood(playground_session: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp_path = tmp_path_factory.mktemp("special-bits")
    cow, live = tmp_path / "cow", tmp_path / "live"
    for folder in (cow, live):
        folder.mkdir()
        (folder / "plugin.php").write_text("<?php\n/* Plugin Name: Modes */\n")
    (live / "shared").mkdir()
    (live / "shared").chmod(0o2775)
    code = MODES_ATTACK.replace("__DIRS__", json.dumps([COW, LIVE, SITE]))
    tool = "<?php file_put_contents('__D__/tool.php', '<?php echo 1;'); echo 'ok';"
    with playground_session.new_run(tmp_path / "artifacts", mounts=[f"{cow}:{COW}", f"{live}:{LIVE}:live"]) as run:
        result = run.execute("wordpress.run-php", ["code=" + code])
        private_copy = run._private_copies[0].path  # the copy-on-write mount's host folder while up
        hosts = {f"site/{name}": _site_copy(run._sandbox.work_dir, name) for name in NAMES}
        hosts |= {f"cow/{name}": private_copy / name for name in NAMES}
        hosts |= {f"live/{name}": live / name for name in NAMES}
        carrying = {label: oct(_special(path)) for label, path in hosts.items() if _special(path)}
        tools = [
            run.execute("wordpress.run-php", ["code=" + tool.replace("__D__", target)]).stdout for target in (COW, LIVE)
        ]
        flood = run.execute("wordpress.run-php", ["code=" + FLOOD.replace("__DIR__", LIVE)])
        (live / "tool.php").chmod(0o4755)
        (private_copy / "tool.php").chmod(0o4755)
        summary = run.capture()
    return {
        "result": result,
        "carrying": carrying,
        "tools": tools,
        "flood": flood,
        "live": live,
        "bundle": Path(summary.path),
    }


def test_sandbox_cannot_make_setuid_setgid_or_sticky_host_files(special_bits_run: dict[str, Any]) -> None:
    result = special_bits_run["result"]
    assert result.exitCode == 0, result.stderr
    assert all(json.loads(result.stdout).values()), result.stdout  # PHP's chmod and mkdir succeeded
    carrying = special_bits_run["carrying"]
    assert not carrying, f"host files with setuid/setgid/sticky bits: {carrying}"
    changed = json.loads((special_bits_run["bundle"] / "files" / "changed-files.json").read_text())
    modes = {f["relativePath"]: f.get("afterMode") for f in changed["files"]}
    assert "suid.php" in modes and "made.txt" in modes, modes
    assert not [rel for rel, mode in modes.items() if mode and int(mode, 8) & SPECIAL], modes


def test_special_bits_that_get_past_the_guard_are_stripped_after_the_run(special_bits_run: dict[str, Any]) -> None:
    """The check behind the guard: a file the sandbox wrote that carries a setuid bit once the sandbox is
    gone (the host sets it, standing in for a guard that failed) is stripped and the run flagged;
    the user's own setgid folder, which had the bit before the run, keeps it."""
    live = special_bits_run["live"]
    assert special_bits_run["tools"] == ["ok", "ok"]
    assert not _special(live / "tool.php")
    assert _special(live / "shared") == stat.S_ISGID
    bundle = special_bits_run["bundle"]
    review = json.loads((bundle / "files" / "review.json").read_text())
    assert "special-mode-bits" in review["riskFlags"]
    events = [json.loads(line) for line in (bundle / "events.jsonl").read_text().splitlines() if line.strip()]
    flagged = {p for e in events if e["type"] == "sandbox.special-mode-bits" for p in e["data"]["paths"]}
    assert flagged == {"tool.php"}, events


@pytest.fixture()
def write_budget_64m() -> Iterator[int]:
    from codebox_tui.settings import reload_settings

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CODEBOX_SANDBOX_WRITE_BUDGET", "64M")
        yield reload_settings().sandbox_write_budget
    reload_settings()


FLOOD = r"""<?php
$f = fopen('__DIR__/flood.bin', 'w');
$chunk = str_repeat('x', 1 << 20);
$written = 0;
$failed = false;
for ($i = 0; $i < 160; $i++) {
    $n = @fwrite($f, $chunk);
    if ($n === false || $n < strlen($chunk)) { $failed = true; $written += (int) $n; break; }
    $written += $n;
}
fclose($f);
echo json_encode(['written' => $written, 'failed' => $failed, 'error' => error_get_last()['message'] ?? '']);
"""


def test_write_budget_stops_a_sandbox_filling_the_disk(special_bits_run: dict[str, Any]) -> None:
    """The flood into the ``:live`` mount of the special-bits run, its last command (its 64 MiB budget)."""
    budget, live, result = special_bits_run["budget"], special_bits_run["live"], special_bits_run["flood"]
    assert budget == 64 * 1024 * 1024
    # the first JSON document; the budget's stop can make PHP print a warning right after it, on the same line
    php, _ = json.JSONDecoder().raw_decode(result.stdout.strip())
    assert php["failed"] and php["written"] <= budget, php
    assert (live / "flood.bin").stat().st_size <= budget
    assert result.exitCode != 0 and "write budget" in result.stderr
    bundle = special_bits_run["bundle"]
    review = json.loads((bundle / "files" / "review.json").read_text())
    assert "write-budget-exceeded" in review["riskFlags"]
    events = [json.loads(line) for line in (bundle / "events.jsonl").read_text().splitlines() if line.strip()]
    hit = [e for e in events if e["type"] == "sandbox.write-budget-exceeded"]
    assert hit and hit[0]["data"]["path"].endswith("flood.bin"), hit


def test_write_budget_counts_playgrounds_internal_files(
    playground_session: Any, tmp_path: Path, write_budget_64m: int
) -> None:
    """/internal (the prepend, php.ini, shared state) is a host temp folder Playground mounts outside the sandbox's
    folder: filling it filled the disk with no budget. The same flood there now stops at the budget and is
    flagged, naming the path PHP wrote."""
    with playground_session.new_run(tmp_path / "artifacts") as run:
        result = run.execute("wordpress.run-php", ["code=" + FLOOD.replace("__DIR__", "/internal/shared")])
        summary = run.capture()
    # the first JSON document; the budget's stop can make PHP print a warning right after it, on the same line
    php, _ = json.JSONDecoder().raw_decode(result.stdout.strip())
    assert php["failed"] and php["written"] <= write_budget_64m, php
    assert result.exitCode != 0 and "write budget" in result.stderr
    bundle = Path(summary.path)
    assert "write-budget-exceeded" in json.loads((bundle / "files" / "review.json").read_text())["riskFlags"]
    events = [json.loads(line) for line in (bundle / "events.jsonl").read_text().splitlines() if line.strip()]
    hit = [e for e in events if e["type"] == "sandbox.write-budget-exceeded"]
    assert hit and hit[0]["data"]["path"] == "/internal/shared/flood.bin", hit


ENTRY_FLOOD = r"""<?php
$d = '/wordpress/wp-content/uploads/entry-flood';
@mkdir($d, 0777, true);
$made = 0; $failed = false;
for ($i = 0; $i < 20000; $i++) {
    $ok = $i % 2 ? @touch("$d/f$i") : @mkdir("$d/d$i");
    if (!$ok) { $failed = true; break; }
    $made++;
}
echo json_encode(['made' => $made, 'failed' => $failed]);
"""


def test_write_budget_counts_empty_files_and_folders(
    playground_session: Any, tmp_path: Path, write_budget_64m: int
) -> None:
    """Empty files and folders cost no bytes, so 20,000 of them (host inodes and blocks) passed a byte budget
    untouched. Each new entry now costs 4 KiB: the flood stops before 16,384 entries (64 MiB) and is flagged."""
    with playground_session.new_run(tmp_path / "artifacts") as run:
        result = run.execute("wordpress.run-php", ["code=" + ENTRY_FLOOD])
        summary = run.capture()
    php = json.JSONDecoder().raw_decode(result.stdout.strip())[0]  # PHP may print the quota warning after it
    assert php["failed"] and php["made"] <= write_budget_64m // 4096, php  # without the charge: all 20,000
    assert (
        "write-budget-exceeded" in json.loads((Path(summary.path) / "files" / "review.json").read_text())["riskFlags"]
    )


def test_the_sidecar_refuses_to_start_without_the_write_guard(tmp_path: Path) -> None:
    """Defence in depth: without writeguard.mjs preloaded no sidecar starts (no mode mask, no budget)."""
    import shutil
    import subprocess

    from codebox_tui.settings import NODE_BRIDGE_DIR

    node = shutil.which("node")
    assert node, "node is needed for the Playground bridge"
    guards = ["--import", "./netguard.mjs", "--import", "./nospawn.mjs", "--import", "./probeguard.mjs"]
    done = subprocess.run(
        [node, *guards, "sidecar.mjs"],
        cwd=NODE_BRIDGE_DIR,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CODEBOX_NETWORK_POLICY": "deny"},
    )
    assert done.returncode == 3, (done.returncode, done.stderr[-500:])
    assert "writeguard.mjs was not preloaded" in done.stderr
    assert '"event":"hello"' not in done.stdout
