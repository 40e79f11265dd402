"""The buggy-counter example plugin as a maintainer's git checkout: ``main`` with the bug, and a
``fix-whitespace`` branch one commit on top adding the fix with its own test
(examples/patches/buggy-counter-fix-with-test.patch). Used by the evaluate-patch proofs of a git range."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.factories.paths import REPO

PLUGIN = REPO / "examples" / "plugins-for-recipes" / "buggy-counter"
FIX_WITH_TEST = REPO / "examples" / "patches" / "buggy-counter-fix-with-test.patch"


def git(repo: Path, *args: str) -> str:
    """``git ARGS`` in ``repo`` as a fixed committer; its stripped stdout."""
    return subprocess.run(
        ["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.org", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def commit_fix_branch(repo: Path) -> Path:
    """Make the folder ``repo`` (the plugin's files, with whatever the caller added) a repository: everything
    committed on ``main``, then the fix with its test committed on ``fix-whitespace`` (checked out)."""
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Word counter")
    git(repo, "checkout", "-qb", "fix-whitespace")
    git(repo, "apply", str(FIX_WITH_TEST))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Count words separated by any whitespace")
    return repo
