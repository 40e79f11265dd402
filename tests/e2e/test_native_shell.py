"""Held sandboxes and the sandbox shell on the native backend (docs/backends.md, docs/exec.md): `codebox boot
--backend native --hold` keeps the site up behind its preview relay, the Launch screen's held run captures its
bundle when released, and `codebox exec` runs on a held native sandbox and on a fresh one, all through the real
CLI, real PHP and real bubblewrap."""

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
    return subprocess.run([sys.executable, "-m", "codebox_tui", *args], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=timeout)


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
    holder = subprocess.Popen([sys.executable, "-m", "codebox_tui", "boot", "--backend", "native", "--hold", "10m",
                               "--json", "--mount", f"{plugin}:{PLUGIN}", "--artifacts", str(root / "artifacts")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert holder.stdout is not None
        doc = _read_json_document(holder.stdout)
        yield {"doc": doc, "holder": holder, "plugin": plugin}
    finally:
        if holder.poll() is None:
            holder.send_signal(signal.SIGTERM)
            holder.wait(timeout=120)


def test_a_held_native_sandbox_serves_its_preview_until_released(held: dict[str, Any]) -> None:
    """The boot document names the relay on 127.0.0.1; a page from it is WordPress's, links pointing back at
    the relay; SIGTERM releases the hold, which is recorded, and the relay stops listening."""
    doc, holder = held["doc"], held["holder"]
    assert doc["success"] is True and doc["runtime"]["backend"] == "native"
    preview = doc["previewUrl"]
    assert preview.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(preview + "/", timeout=120) as page:
        body = page.read().decode("utf-8", "replace")
    assert page.status == 200 and "<html" in body and preview in body
    holder.send_signal(signal.SIGTERM)
    assert holder.wait(timeout=120) == 0
    events = [json.loads(line) for line in
              (Path(doc["artifacts"]["directory"]) / "events.jsonl").read_text().splitlines()]
    kinds = [e["type"] for e in events]
    assert "runtime.held" in kinds and "runtime.hold-ended" in kinds
    with pytest.raises(OSError):
        urllib.request.urlopen(preview + "/", timeout=30)


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
    request = RunRequest(mounts=mounts_from_text([f"{plugin}:{PLUGIN}"]), backend="native",
                         commands=[CommandStep("wordpress.run-php", [f"code={code}"], 120)], hold_s=600,
                         artifacts_root=tmp_path / "artifacts")
    outcome = RunService().run(request, on_held=on_held)
    assert pages == [200]
    assert outcome.status == "completed" and outcome.bundle is not None, outcome.error
    changed = json.loads((Path(outcome.bundle.path) / "files" / "changed-files.json").read_text())["files"]
    assert [(f["path"], f["status"]) for f in changed] == [(f"{PLUGIN}/held.txt", "added")], changed
    assert not (plugin / "held.txt").exists()  # copy-on-write: only apply-back changes the folder
