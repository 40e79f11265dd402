"""Real bundles captured from a real plugin folder, for tests of the capture, verifier, reader, CLI and TUI."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from codebox_tui.bundle.baseline import take_baselines
from codebox_tui.bundle.capture import BundleSummary, capture_bundle
from codebox_tui.contracts.common import utc_now_iso
from codebox_tui.contracts.runtime import MountSpec, RuntimeInfo, RuntimePolicy
from codebox_tui.runtime.session import EvidenceFile as Evidence

GIT = ["git", "-c", "user.email=t@example.test", "-c", "user.name=t"]


def _runtime() -> RuntimeInfo:
    return RuntimeInfo(id="runtime-test", createdAt=utc_now_iso(), environment={"wordpressVersion": "6.5.5"})


def make_bundle(
    tmp: Path,
    mutate,
    *,
    git: bool = False,
    secrets: list[str] | None = None,  # type: ignore[no-untyped-def]
    evidence: dict[str, tuple[str, str]] | None = None,
    prepare=None,
) -> tuple[BundleSummary, Path]:
    """``evidence``: extra evidence files the run wrote, path → (kind, JSON text); ``prepare(source)`` edits the
    plugin before its baseline is taken (what the sandbox is given)."""
    source = tmp / "plugin"
    source.mkdir()
    (source / "plugin.php").write_text("".join(f"<?php // line {i}\n" for i in range(40)))
    (source / "readme.txt").write_text("read me\n")
    (source / "keep.bin").write_bytes(bytes(range(256)))
    (source / "lib").mkdir()
    (source / "lib" / "util.php").write_text("<?php\nfunction util() { return 1; }\n")
    if prepare is not None:
        prepare(source)
    if git:
        subprocess.run(["git", "init", "-q", str(source)], check=True)
        subprocess.run([*GIT, "-C", str(source), "add", "."], check=True)
        subprocess.run([*GIT, "-C", str(source), "commit", "-qm", "base"], check=True)
    mount = MountSpec(source=str(source), target="/wordpress/wp-content/plugins/plugin", mode="readwrite")
    baselines = take_baselines([mount], tmp / "scratch")
    pristine = tmp / "pristine"
    shutil.copytree(source, pristine, ignore=shutil.ignore_patterns(".git"))
    mutate(source)
    run_dir = tmp / "run"
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / "events.jsonl").write_text('{"id":"event-1","type":"runtime.created"}\n')
    listed = []
    for rel, (kind, text) in (evidence or {}).items():
        (run_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / rel).write_text(text, encoding="utf-8")
        listed.append(Evidence(path=rel, kind=kind, contentType="application/json"))
    summary = capture_bundle(
        run_dir,
        runtime=_runtime(),
        mounts=[mount],
        baselines=baselines,
        policy=RuntimePolicy(commands=["wordpress.run-php"]),
        metadata={"caller": "test"},
        secret_values=secrets or [],
        evidence=listed,
        test_suites=[],
    )
    return summary, pristine


def typical_change(source: Path) -> None:
    text = (source / "plugin.php").read_text().replace("line 20", "LINE twenty")
    (source / "plugin.php").write_text(text + "// appended without newline")
    (source / "readme.txt").unlink()
    (source / "added.php").write_text("<?php echo 'new';\n")
    (source / "keep.bin").write_bytes(bytes(range(255, -1, -1)) + b"\0tail")
    (source / "lib" / "run.sh").write_text("#!/bin/sh\necho hi\n")
    os.chmod(source / "lib" / "run.sh", 0o755)


@dataclass
class AddedFile:
    path: str
    kind: str = "artifact-bundle-verification"
    contentType: str = "application/json"


def second_try(source: Path) -> None:
    """Revision 2 of the same change: line 20 reworded again, line 5 changed too, readme kept."""
    text = (source / "plugin.php").read_text().replace("line 20", "line twenty").replace("line 5\n", "line five\n")
    (source / "plugin.php").write_text(text)
    (source / "added.php").write_text("<?php echo 'new';\n")
