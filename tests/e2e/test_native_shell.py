"""Held sandboxes and the sandbox shell on the native backend (docs/backends.md, docs/exec.md): `codebox boot
--backend native --hold` keeps the site up behind its preview relay, the Launch screen's held run captures its
bundle when released, and `codebox exec` runs on a held native sandbox and on a fresh one, all through the real
CLI, real PHP and real bubblewrap. The held sandbox's exec socket (its modes, its refusals, its removal) is
checked here for both backends: it serves any backend's sandbox through the same ``run_exec``
(runtime/exec_server.py)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.factories.paths import EXAMPLE_PLUGIN, REPO

pytestmark = pytest.mark.native

PLUGIN = "/wordpress/wp-content/plugins/simple-plugin"


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codebox_tui", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=timeout,
    )


def _read_json_document(stream: Any) -> dict[str, Any]:
    """The first whole JSON document a process prints (``--json`` pretty-prints it over several lines)."""
    text = ""
    for line in stream:
        text += line
        try:
            found = json.loads(text)
        except ValueError:
            continue
        assert isinstance(found, dict)
        return found
    raise AssertionError(f"no JSON document in {text!r}")


@pytest.fixture(scope="module")
def held(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One `codebox boot --backend native --hold` for the module (the example plugin mounted read-write):
    its boot document, the holder process and its artifacts folder."""
    root = tmp_path_factory.mktemp("held-native")
    plugin = root / "simple-plugin"
    shutil.copytree(EXAMPLE_PLUGIN, plugin)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "codebox_tui",
            "boot",
            "--backend",
            "native",
            "--hold",
            "10m",
            "--json",
            "--mount",
            f"{plugin}:{PLUGIN}",
            "--artifacts",
            str(root / "artifacts"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert holder.stdout is not None
        doc = _read_json_document(holder.stdout)
        yield {"doc": doc, "holder": holder, "plugin": plugin}
    finally:
        if holder.poll() is None:
            holder.send_signal(signal.SIGTERM)
            holder.wait(timeout=120)


def test_a_held_native_sandbox_serves_its_preview(held: dict[str, Any]) -> None:
    """The boot document names the relay on 127.0.0.1; a page from it is WordPress's, links pointing back at
    the relay."""
    doc = held["doc"]
    assert doc["success"] is True and doc["runtime"]["backend"] == "native"
    preview = doc["previewUrl"]
    assert preview.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(preview + "/", timeout=120) as page:
        body = page.read().decode("utf-8", "replace")
    assert page.status == 200 and "<html" in body and preview in body


def test_exec_on_a_held_native_sandbox(held: dict[str, Any]) -> None:
    """`codebox exec --sandbox` reaches the held native sandbox over a 0600 Unix socket for its own user (in a
    0700 folder): a write (with the write capability) is seen by the next read, and by the preview; the host's
    folder is untouched (copy-on-write); options that would change the sandbox (`--mount`) are refused."""
    from codebox_tui.settings import get_settings

    held_id = held["doc"]["runtime"]["id"]
    sock = get_settings().home / "held" / f"{held_id}.sock"  # the holder runs with this process's CODEBOX_HOME
    assert sock.exists() and (sock.stat().st_mode & 0o777) == 0o600
    assert (sock.parent.stat().st_mode & 0o777) == 0o700
    wrote = _cli(
        "exec",
        "--sandbox",
        held_id,
        "--json",
        "--capabilities",
        "read,write",
        f"sed -i 's/Hello/Howdy/' {PLUGIN}/simple-plugin.php && echo held > /tmp/held.txt",
    )
    assert wrote.returncode == 0, wrote.stdout + wrote.stderr
    assert json.loads(wrote.stdout)["classification"] == "sandbox_write"
    read = _cli("exec", "--sandbox", held_id, "--json", f"cat /tmp/held.txt; grep -c Howdy {PLUGIN}/simple-plugin.php")
    result = json.loads(read.stdout)
    assert read.returncode == 0 and result["stdout"] == "held\n1\n", result
    assert result["classification"] == "read_only" and result["runtimeId"] == held_id
    assert result["capabilities"] == ["read"]
    assert "Howdy" not in (held["plugin"] / "simple-plugin.php").read_text()
    missing = _cli("exec", "--sandbox", held_id, "--json", "--mount", f"{held['plugin']}:/wordpress/x", "ls")
    assert missing.returncode == 2 and "--mount" in missing.stdout


def test_releasing_the_held_native_sandbox_records_it_and_stops_the_relay(held: dict[str, Any]) -> None:
    """SIGTERM releases the hold: recorded in the run's events with both execs, the exec socket and the
    relay are gone."""
    from codebox_tui.settings import get_settings

    doc, holder = held["doc"], held["holder"]
    holder.send_signal(signal.SIGTERM)
    assert holder.wait(timeout=120) == 0
    assert not (get_settings().home / "held" / f"{doc['runtime']['id']}.sock").exists()
    events = [
        json.loads(line) for line in (Path(doc["artifacts"]["directory"]) / "events.jsonl").read_text().splitlines()
    ]
    kinds = [e["type"] for e in events]
    assert "runtime.held" in kinds and "runtime.hold-ended" in kinds
    assert [e["data"]["classification"] for e in events if e["type"] == "exec.finished"] == [
        "sandbox_write",
        "read_only",
    ]
    with pytest.raises(OSError):
        urllib.request.urlopen(doc["previewUrl"] + "/", timeout=30)
    gone = _cli("exec", "--sandbox", doc["runtime"]["id"], "--json", "ls")
    assert gone.returncode == 2 and json.loads(gone.stdout)["error"]["code"] == "no-held-sandbox"


def test_a_held_native_run_captures_its_bundle_when_released(tmp_path: Path) -> None:
    """The Launch screen's hold (RunService.run with ``hold_s``): the command runs, the preview is held and
    serves pages, and when the reviewer releases it the run's bundle is captured with the command's change."""
    from codebox_tui.lifecycle import CommandStep, RunRequest, RunService, mounts_from_text

    plugin = tmp_path / "simple-plugin"
    shutil.copytree(EXAMPLE_PLUGIN, plugin)
    pages: list[int] = []

    def on_held(run: Any) -> None:
        with urllib.request.urlopen(run.sandbox.preview_url + "/", timeout=120) as page:
            pages.append(page.status)
        run.control.release()

    code = f"file_put_contents('{PLUGIN}/held.txt', 'made while held');"
    request = RunRequest(
        mounts=mounts_from_text([f"{plugin}:{PLUGIN}"]),
        backend="native",
        commands=[CommandStep("wordpress.run-php", [f"code={code}"], 120)],
        hold_s=600,
        artifacts_root=tmp_path / "artifacts",
    )
    outcome = RunService().run(request, on_held=on_held)
    assert pages == [200]
    assert outcome.status == "completed" and outcome.bundle is not None, outcome.error
    changed = json.loads((Path(outcome.bundle.path) / "files" / "changed-files.json").read_text())["files"]
    assert [(f["path"], f["status"]) for f in changed] == [(f"{PLUGIN}/held.txt", "added")], changed
    assert not (plugin / "held.txt").exists()  # copy-on-write: only apply-back changes the folder


def test_exec_on_a_fresh_native_sandbox_reads_writes_and_leaves_a_reviewable_bundle(tmp_path: Path) -> None:
    """`codebox exec --backend native`: a read command prints what the sandbox holds (`on rg` by scope, `wp eval`
    with the eval capability); a write command changes the mount's private copy and its bundle lists the change
    for review, the host folder untouched."""
    plugin = tmp_path / "simple-plugin"
    shutil.copytree(EXAMPLE_PLUGIN, plugin)
    mount = f"{plugin}:{PLUGIN}"
    read = _cli(
        "exec",
        "--backend",
        "native",
        "-m",
        mount,
        "--artifacts",
        str(tmp_path / "a"),
        "--json",
        "-q",
        "--capabilities",
        "read,eval",
        "on rg -l Hello --plugins; wp eval 'echo get_option(\"siteurl\");'",
    )
    result = json.loads(read.stdout)
    assert read.returncode == 0, result
    assert result["classification"] == "eval" and f"{PLUGIN}/simple-plugin.php" in result["stdout"]
    assert "http://127.0.0.1:" in result["stdout"]
    wrote = _cli(
        "exec",
        "--backend",
        "native",
        "-m",
        mount,
        "--artifacts",
        str(tmp_path / "b"),
        "--capabilities",
        "read,write",
        f"sed -i 's/Hello/Howdy/' {PLUGIN}/simple-plugin.php",
    )
    assert wrote.returncode == 0, wrote.stderr
    [bundle] = [p for p in (tmp_path / "b").iterdir() if (p / "manifest.json").exists()]
    metadata = json.loads((bundle / "metadata.json").read_text())
    assert metadata["runtime"]["backend"] == "native"
    changed = json.loads((bundle / "files" / "changed-files.json").read_text())["files"]
    assert [(f["path"], f["status"]) for f in changed] == [(f"{PLUGIN}/simple-plugin.php", "modified")]
    assert "Howdy" not in (plugin / "simple-plugin.php").read_text()


def test_a_denied_native_exec_is_refused_before_any_boot(tmp_path: Path) -> None:
    """The capability check on the host comes first on native too: exit 3, nothing booted, no bundle."""
    home = tmp_path / "home"
    home.mkdir()
    denied = subprocess.run(
        [
            sys.executable,
            "-m",
            "codebox_tui",
            "exec",
            "--backend",
            "native",
            "--artifacts",
            str(tmp_path / "a"),
            "touch /wordpress/wp-content/x",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "CODEBOX_HOME": str(home)},
        timeout=120,
    )
    assert denied.returncode == 3 and "allow it with --capabilities read,write" in denied.stderr
    assert list(home.iterdir()) == [] and not (tmp_path / "a").exists()
