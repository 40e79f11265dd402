"""A real run whose sandbox changes ``readme.txt`` in two read-write mounts (the same relative path in both): the
set-up of the tests that a decision binds to the mount the reviewer named (tests/security/test_ambiguous_file_names.py
through the CLI, tests/security/test_review_two_mounts.py through the Review screen)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.factories.held import codebox

FIRST = "/wordpress/wp-content/plugins/first"
SECOND = "/wordpress/wp-content/plugins/second"
BASELINE = b"=== Readme ===\nStable tag: 1.0\n"
EDITS = {
    FIRST: b"=== Readme ===\nStable tag: 1.0\n\nchanged in the FIRST mount\n",
    SECOND: b"=== Readme ===\nStable tag: 1.0\n\nchanged in the SECOND mount\n",
}


def readme_folders(tmp_path: Path) -> dict[str, Path]:
    """The host folders ``first`` and ``second`` under ``tmp_path``, each with the baseline ``readme.txt``, by the
    sandbox path each is mounted at."""
    folders = {FIRST: tmp_path / "first", SECOND: tmp_path / "second"}
    for folder in folders.values():
        folder.mkdir()
        (folder / "readme.txt").write_bytes(BASELINE)
    return folders


def run_changing_both_readmes(
    home: Path, folders: dict[str, Path], *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``codebox run`` on the native backend in a process of its own, as a user starts it: both folders mounted
    read-write, the PHP writing each mount's ``EDITS`` into its ``readme.txt``; ``args`` follow (``--json``…)."""
    code = "".join(
        f"file_put_contents('{target}/readme.txt', {json.dumps(data.decode())});" for target, data in EDITS.items()
    )
    return codebox(
        home,
        "run",
        "--backend",
        "native",
        *(a for target, folder in folders.items() for a in ("--mount", f"{folder}:{target}")),
        "--command",
        "wordpress.run-php",
        "--arg",
        f"code={code}",
        *args,
        timeout=300,
        env=env,
    )
