"""A baseline folder, the changes a sandbox makes to it through a read-write mount, and the real capture of
them: the apply-back, SIGKILL and host-trust tests start from these."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

MOUNT_TARGET = "/wordpress/wp-content/plugins/demo"
BASELINE = {
    "demo.php": b"<?php\n/* Plugin Name: Demo */\nfunction demo() {\n\treturn 1;\n}\n",
    "readme.txt": b"=== Demo ===\nStable tag: 1.0\n",
    "includes/old.php": b"<?php\n// to be removed\n",
    "includes/keep.php": b"<?php\n// untouched\n",
}
CHANGES: dict[str, bytes | None] = {
    "demo.php": b"<?php\n/* Plugin Name: Demo */\nfunction demo() {\n\treturn 2;\n}\n",
    "readme.txt": b"=== Demo ===\nStable tag: 1.1\n\nChangelog: bump\n",
    "includes/old.php": None,
    "includes/new/extra.php": b"<?php\n// added by the sandbox\n",
}


def write_tree(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def expected_tree(approved: list[str]) -> dict[str, bytes]:
    out = dict(BASELINE)
    for rel in approved:
        data = CHANGES[rel]
        if data is None:
            out.pop(rel, None)
        else:
            out[rel] = data
    return dict(sorted(out.items()))


@dataclass
class Captured:
    bundle_dir: Path
    baseline: Path  # a pristine copy of the mount root before the sandbox ran


def capture(tmp_path: Path, changes: dict[str, bytes | None] | None = None) -> Captured:
    """Baseline → sandbox edits through the read-write mount → the real capture."""
    from codebox_tui.bundle.baseline import take_baselines
    from codebox_tui.contracts.common import utc_now_iso
    from codebox_tui.contracts.runtime import MountSpec, RuntimeInfo
    from tests.factories.capture import capture_plain_run

    mount_src = tmp_path / "mount"
    write_tree(mount_src, BASELINE)
    baseline = tmp_path / "baseline"
    shutil.copytree(mount_src, baseline)
    mounts = [MountSpec(source=str(mount_src), target=MOUNT_TARGET, mode="readwrite")]
    baselines = take_baselines(mounts, tmp_path / "scratch")
    for rel, data in (CHANGES if changes is None else changes).items():
        path = mount_src / rel
        if data is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    run_dir = tmp_path / "artifacts" / "runtime-test"
    run_dir.mkdir(parents=True)
    summary = capture_plain_run(
        run_dir, mounts, baselines, RuntimeInfo(id="runtime-test", createdAt=utc_now_iso(), status="running")
    )
    bundle_dir = Path(getattr(summary, "directory", None) or getattr(summary, "path", None) or run_dir)
    assert (bundle_dir / "manifest.json").is_file()
    return Captured(bundle_dir=bundle_dir, baseline=baseline)


def reseal(bundle_dir: Path) -> None:
    """What an attacker with write access would do: re-hash every file and the manifest itself."""
    from codebox_tui.contracts.canonical import domain_digest, sha256_hex

    manifest_path = bundle_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    review_path = bundle_dir / "files" / "review.json"
    if review_path.exists():
        review = json.loads(review_path.read_text())
        evidence = review.get("evidence", {})
        if "patchSha256" in evidence:
            evidence["patchSha256"] = sha256_hex((bundle_dir / "files" / "patch.diff").read_bytes())
        review_path.write_text(json.dumps(review, indent=2, sort_keys=True) + "\n")
    ref_path = bundle_dir / "files" / "runtime-reference-manifest.json"
    if ref_path.exists():  # it records file hashes too, under its own digest
        ref = json.loads(ref_path.read_text())
        for item in ref.get("files", []):
            item["sha256"] = {"algorithm": "sha256", "value": sha256_hex((bundle_dir / item["path"]).read_bytes())}
        payload = {k: v for k, v in ref.items() if k not in ("id", "createdAt", "digest")}
        value = domain_digest(ref["schema"], payload)
        ref["digest"] = {"algorithm": "sha256", "value": value}
        ref["id"] = f"runtime-reference-manifest-sha256-{value}"
        ref_path.write_text(json.dumps(ref, indent=2, sort_keys=True) + "\n")
    replay_path = bundle_dir / "files" / "runtime-replay-index.json"
    if replay_path.exists():  # so does the replay index (the reference manifest's new hash included)
        replay = json.loads(replay_path.read_text())
        for item in replay.get("references", {}).values():
            item["sha256"] = {"algorithm": "sha256", "value": sha256_hex((bundle_dir / item["path"]).read_bytes())}
        payload = {k: v for k, v in replay.items() if k not in ("id", "createdAt", "digest")}
        value = domain_digest(replay["schema"], payload)
        replay["digest"] = {"algorithm": "sha256", "value": value}
        replay["id"] = f"runtime-replay-reference-index-sha256-{value}"
        replay_path.write_text(json.dumps(replay, indent=2, sort_keys=True) + "\n")
    for entry in manifest["files"]:
        if entry["path"] != "manifest.json":
            entry["sha256"] = {
                "algorithm": "sha256",
                "value": sha256_hex((bundle_dir / entry["path"]).read_bytes()),
            }
    for entry in manifest["files"]:
        if entry["path"] == "manifest.json":
            entry["sha256"] = {"algorithm": "sha256", "value": "0" * 64}
            entry["sha256"]["value"] = domain_digest("wp-codebox/artifact-manifest-self/v1", manifest)
    manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def verify_ok(bundle_dir: Path) -> bool:
    from codebox_tui.bundle.verify import verify_bundle

    return bool(verify_bundle(bundle_dir).valid)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def git_repo(cap: Captured, tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(cap.baseline, repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "dev@example.test")
    git(repo, "config", "user.name", "Dev")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "baseline")
    return repo
