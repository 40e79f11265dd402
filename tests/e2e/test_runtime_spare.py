"""End-to-end: the warm path with a pre-booted spare sandbox. The spare is booted without mounts;
the next run takes it and attaches its mounts after boot — read-only must still be enforced, and the git folder
of a read-write mount still shielded (tests/e2e/test_runtime_playground.py checks the shield on a fresh boot)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from codebox_tui.runtime.playground import discard_spare_sandboxes, enable_spare_sandboxes, spares_in_hand
from tests.factories.paths import EXAMPLE_PLUGIN
from tests.factories.waiting import wait_for_reaper

pytestmark = pytest.mark.playground

PLUGIN = "/wordpress/wp-content/plugins/simple-plugin"


def test_prewarmed_spares_get_the_mounts_of_the_next_runs(
    playground_session,
    codebox_home: Path,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    """`prewarm` boots a spare (only when spares are on, and one at a time) that the first run takes; once that run's
    sandbox stops the next spare boots, and the second run takes it. (One test, so the first run takes the prewarmed
    spare instead of booting a sandbox of its own: the same claims, one boot fewer.)"""
    from codebox_tui.contracts.runtime import RuntimePolicy
    from codebox_tui.runtime.backend import SandboxSpec
    from codebox_tui.runtime.playground import PlaygroundBackend

    rw = tmp_path / "rw"
    subprocess.run(["git", "init", "-q", str(rw)], check=True)
    hooks = rw / ".git" / "hooks"
    hooks_before = sorted(p.name for p in hooks.iterdir())
    config = (rw / ".git" / "config").read_bytes()
    mounts = [f"{EXAMPLE_PLUGIN}:{PLUGIN}:readonly", f"{rw}:/srv/rw:readwrite"]
    sandboxes = codebox_home / "sandboxes"
    before = set(os.listdir(sandboxes)) if sandboxes.exists() else set()
    discard_spare_sandboxes()  # no spare left over from earlier tests: the first run can only get a prewarmed one
    backend = PlaygroundBackend()
    spec = SandboxSpec(mounts=[], policy=RuntimePolicy(commands=["wordpress.run-php"]))
    enable_spare_sandboxes(False)
    try:
        assert backend.prewarm(spec) is False  # spares off
        enable_spare_sandboxes(True)
        assert backend.prewarm(spec) is True
        assert backend.prewarm(spec) is False  # one is enough
        with playground_session.new_run(tmp_path / "a1", mounts=mounts) as first:
            mounted = first.execute(  # takes the prewarmed spare
                "wordpress.run-php", [f"code=echo file_exists('{PLUGIN}/simple-plugin.php') ? 'mounted' : 'no';"]
            )
            first_phases = [
                json.loads(line)["data"].get("phase")
                for line in (first.run_dir / "events.jsonl").read_text().splitlines()
            ]
            # the next spare boots once this sandbox stops, not while its run goes on (issue 27)
            in_hand_during_first = spares_in_hand()
        in_hand_after_first = spares_in_hand()
        with playground_session.new_run(tmp_path / "a2", mounts=mounts) as second:
            second.boot_sandbox()  # takes the spare
            in_hand_during_second = spares_in_hand()
            result = second.execute(
                "wordpress.run-php",
                [
                    "code=echo json_encode(["
                    f"'files' => scandir('{PLUGIN}'),"
                    f"'ro' => @file_put_contents('{PLUGIN}/evil.php', 'x'),"
                    "'git' => array_values(array_diff(scandir('/srv/rw/.git'), ['.', '..'])),"
                    "'hook' => @file_put_contents('/srv/rw/.git/hooks/post-checkout', \"#!/bin/sh\\necho pwned\\n\"),"
                    "'config' => @file_put_contents('/srv/rw/.git/config', '[core]'),"
                    "'rw' => file_put_contents('/srv/rw/out.txt', 'from-spare')]);"
                ],
            )
            phases = [
                json.loads(line)["data"].get("phase")
                for line in (second.run_dir / "events.jsonl").read_text().splitlines()
            ]
            summary = second.capture()
        reapers = [first.reaper_pid, second.reaper_pid]
        in_hand_after_second = spares_in_hand()
    finally:
        enable_spare_sandboxes(None)  # back to the setting
        discard_spare_sandboxes()
    assert "using-prebooted-sandbox" in first_phases
    assert mounted.stdout == "mounted", mounted.stderr
    assert "using-prebooted-sandbox" in phases
    assert (in_hand_during_first, in_hand_after_first, in_hand_during_second, in_hand_after_second) == (0, 1, 0, 1)
    doc = json.loads(result.stdout)
    assert "simple-plugin.php" in doc["files"]
    assert doc["ro"] is False
    assert not (EXAMPLE_PLUGIN / "evil.php").exists()
    assert doc["rw"] == len("from-spare")
    # the mounts attached to the spare shield the git folder as a fresh boot does: nothing to read, nothing planted
    assert "shielding-git-folder" in phases
    assert (doc["git"], doc["hook"], doc["config"]) == ([], False, False)
    assert sorted(p.name for p in hooks.iterdir()) == hooks_before
    assert (rw / ".git" / "config").read_bytes() == config
    # the read-write mount is copy-on-write: the spare mounted its private copy; the write is in the bundle
    assert not (rw / "out.txt").exists()
    changed = {f["relativePath"]: f for f in summary.changed_files}
    assert changed["out.txt"]["status"] == "added"
    assert (summary.path / changed["out.txt"]["artifactPath"]).read_text() == "from-spare"
    assert all(wait_for_reaper(pid) for pid in reapers), "a reaper did not finish"
    assert set(os.listdir(sandboxes)) - before == set()  # the taken spare and the new one are gone
