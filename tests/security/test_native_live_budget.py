"""A native sandbox's writes into a ``:live`` mount (the user's own folder) count against its one disk budget
(docs/backends.md, "The native wall"; docs/security.md "What a sandbox may write"). The attack is performed for
real through the real CLI: PHP and child processes (``dd``, ``cp``) write many files into the live folder, each
under the per-file cap, far past a small budget."""

from __future__ import annotations

import json
import os
import re
import textwrap
from pathlib import Path

import pytest

from codebox_tui.runtime.leftover_mounts import mount_points
from codebox_tui.settings import get_settings
from tests.factories.held import codebox
from tests.factories.native import native_run
from tests.factories.waiting import wait_until

pytestmark = [
    pytest.mark.native,
    pytest.mark.skipif(os.geteuid() != 0, reason="the data tmpfs (the disk budget) needs Codebox as root"),
]

LIVE = "/wordpress/wp-content/plugins/live"
BUDGET = 8 << 20
# First every kind of change the folder must get (a user's file deleted, one changed, a new folder, a folder
# replaced by a new one and one by a file, a link, a mode, a file made and removed again, a folder of the
# user's renamed) and 20 sparse files of 7 MiB (next to nothing in the budget: their zeros must not be written
# out on the user's disk); then 1 MiB files from PHP until a write fails (at most 24), a `dd` child writing 20 MiB and
# a `cp` child copying a file already there, 30 hard links to a 1 MiB file (names, not bytes, in the budget);
# then what the folder holds, as `du` sees it inside.
LIVE_FILL = textwrap.dedent(f"""\
    <?php
    $d = '{LIVE}';
    unlink("$d/old.txt");
    file_put_contents("$d/live.php", "<?php\\n// Plugin Name: Live, changed\\n");
    mkdir("$d/new-dir");
    file_put_contents("$d/new-dir/inner.txt", 'inner');
    chmod("$d/new-dir/inner.txt", 0640);
    shell_exec("rm -rf $d/replaced && mkdir $d/replaced && echo fresh > $d/replaced/fresh.txt");
    shell_exec("rm -rf $d/to-file && echo 'now a file' > $d/to-file");
    shell_exec("ln -s /etc/hostname $d/link");
    file_put_contents("$d/brief.txt", 'brief');
    usleep(600000);
    unlink("$d/brief.txt");
    echo 'renamed:', var_export(@rename("$d/keep-dir", "$d/kept-dir"), true), "\\n";
    shell_exec('for i in $(seq 1 20); do truncate -s 7M ' . $d . '/sparse-$i.bin; done');
    $n = 0;
    for ($i = 0; $i < 24; $i++) {{
        if (@file_put_contents("$d/fill-$i.bin", str_repeat('x', 1 << 20)) !== (1 << 20)) {{ break; }}
        $n++;
    }}
    echo 'php-files:', $n, "\\n";
    echo 'dd:', shell_exec("dd if=/dev/zero of=$d/dd.bin bs=1M count=20 2>&1");
    echo 'cp:', shell_exec("cp $d/fill-0.bin $d/copy.bin 2>&1"), "\\n";
    shell_exec('for i in $(seq 1 30); do ln ' . $d . '/fill-0.bin ' . $d . '/hard-$i.bin; done');
    echo 'du-kib:', (int) shell_exec("du -sk $d | cut -f1"), "\\n";
    """)


def _usage(folder: Path) -> int:
    """The bytes ``folder``'s files take on the host's disk (allocated blocks, each file once however many names
    it has), links not followed."""
    files = {(i.st_dev, i.st_ino): i.st_blocks * 512 for i in (p.lstat() for p in folder.rglob("*"))}
    return sum(files.values())


def test_many_files_written_into_a_live_folder_stop_at_the_sandboxs_disk_budget(tmp_path: Path) -> None:
    """The live folder's writes stop at the sandbox's one budget with "No space left on device" (PHP, then the
    `dd` and `cp` children), the command's stderr says the budget is spent and the run is flagged
    `write-budget-exceeded`; the user's folder gained at most the budget — and it did get what the sandbox
    wrote within it (live: no apply step), every file whole, no staging file left — and no mount outlives the
    run."""
    live = tmp_path / "live"
    live.mkdir()
    (live / "live.php").write_text("<?php\n// Plugin Name: Live\n")
    (live / "old.txt").write_text("the user's\n")
    for folder in ("replaced", "to-file", "keep-dir"):
        (live / folder).mkdir()
        (live / folder / "old.txt").write_text("the user's\n")
    code_file = tmp_path / "fill.php"
    code_file.write_text(LIVE_FILL)
    (tmp_path / "tmp").mkdir()
    before = _usage(live)
    home = str(get_settings().home)
    mounted_before = {point for point in mount_points() if point.startswith(home)}  # this process's own sandboxes
    out = codebox(
        Path(home),
        *("run", "--backend", "native", "--mount", f"{live}:{LIVE}:live"),
        *("--command", "wordpress.run-php", "--arg", f"code-file={code_file}"),
        *("--artifacts", str(tmp_path / "artifacts"), "--json"),
        env={"TMPDIR": str(tmp_path / "tmp"), "CODEBOX_SANDBOX_WRITE_BUDGET": str(BUDGET)},
    )
    doc = json.loads(out.stdout)
    assert out.returncode == 1 and doc["execution"]["exitCode"] != 0, out.stdout[-2000:] + out.stderr[-2000:]
    stdout = doc["execution"]["stdout"]
    report = dict(line.split(":", 1) for line in stdout.splitlines() if re.match(r"^(php-files|du-kib|renamed):", line))
    assert 0 < int(report["php-files"]) <= BUDGET >> 20, stdout
    assert stdout.count("No space left on device") >= 2, stdout  # the dd child, then the cp child
    assert "write budget" in doc["execution"]["stderr"], doc["execution"]
    bundle = Path(doc["artifacts"]["directory"])
    assert "write-budget-exceeded" in json.loads((bundle / "files" / "review.json").read_text())["riskFlags"]
    # the user's folder: at most the budget more than before, holding what the sandbox wrote within it
    assert _usage(live) - before <= BUDGET, sorted((p.name, p.stat().st_size) for p in live.iterdir())
    names = {p.name for p in live.iterdir()}
    assert {"live.php", "fill-0.bin"} <= names, names
    assert not [name for name in names if name.startswith(".codebox-live-")], names
    php_files = int(report["php-files"])
    assert all((live / f"fill-{i}.bin").stat().st_size == 1 << 20 for i in range(php_files)), names
    # every kind of change reached the folder, by descriptor (the link made again, never followed)
    assert not (live / "old.txt").exists() and not (live / "brief.txt").exists(), names
    assert (live / "live.php").read_text() == "<?php\n// Plugin Name: Live, changed\n"
    assert (live / "new-dir" / "inner.txt").read_text() == "inner"
    assert (live / "new-dir" / "inner.txt").stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in (live / "replaced").iterdir()) == ["fresh.txt"]
    assert (live / "to-file").read_text() == "now a file\n"
    assert os.readlink(live / "link") == "/etc/hostname"
    assert all((live / f"sparse-{i}.bin").stat().st_size == 7 << 20 for i in range(1, 21)), names
    assert (live / "hard-30.bin").stat().st_ino == (live / "fill-0.bin").stat().st_ino  # linked, not copied
    # a folder of the user's cannot be renamed inside (the overlay's EXDEV; docs/backends.md): it stays whole
    assert report["renamed"] == "false" and (live / "keep-dir" / "old.txt").is_file() and "kept-dir" not in names
    changed = json.loads((bundle / "files" / "changed-files.json").read_text())["files"]
    assert "fill-0.bin" in {c["relativePath"] for c in changed}, changed  # capture saw the writes

    def left() -> set[str]:  # the run's overlay and data file system are detached when it ends
        return {point for point in mount_points() if point.startswith(home)} - mounted_before

    assert wait_until(lambda: not left(), timeout=60), f"mounts outlived the run: {left()}"


def test_a_link_the_sandbox_swaps_in_for_a_folder_sends_no_copy_outside_the_live_folder(tmp_path: Path) -> None:
    """A first command plants a link to a host folder in the live folder (copied in as a link when the command
    ends); a second replaces it with a folder of the same name holding a file. Copying that in must not follow
    the link the user's folder now holds: the file lands in a real folder inside the live folder, never in the
    host folder the link named."""
    live, outside = tmp_path / "live", tmp_path / "outside"
    live.mkdir()
    outside.mkdir()
    (live / "live.php").write_text("<?php\n// Plugin Name: Live\n")
    plant = f"code=<?php shell_exec('ln -s {outside} {LIVE}/evil'); echo 'planted';"
    swap = (
        f"code=<?php unlink('{LIVE}/evil'); mkdir('{LIVE}/evil');"
        f" echo file_put_contents('{LIVE}/evil/planted.txt', 'planted');"
    )
    with native_run(tmp_path / "artifacts", mounts=[f"{live}:{LIVE}:live"]) as run:
        planted = run.execute("wordpress.run-php", [plant])
        link_while_up = os.readlink(live / "evil") if (live / "evil").is_symlink() else ""
        swapped = run.execute("wordpress.run-php", [swap])
        run.capture()
    assert planted.exitCode == 0 and swapped.exitCode == 0, (planted.stderr, swapped.stderr)
    assert link_while_up == str(outside)  # the plant reached the host folder (else the rest proves nothing)
    assert list(outside.iterdir()) == []
    assert (live / "evil").is_dir() and not (live / "evil").is_symlink()
    assert (live / "evil" / "planted.txt").read_text() == "planted"
