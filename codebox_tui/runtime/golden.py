"""Golden pre-installed WordPress site directories, one per shipped build, and per-sandbox copies.

A golden site is the build's zip unpacked with its static assets restored (the Playground zips
are "minified": jQuery, dashicons and wp-includes/js/dist are missing). It carries the zip's
pre-installed SQLite database, so Playground boots it with ``do-not-attempt-installing`` in about
a second instead of unzipping and installing each time. Golden sites are built once, atomically.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

from codebox_tui.errors import SandboxError
from codebox_tui.runtime.wordpress_builds import WordPressBuild

GOLDEN_FORMAT = "1"


def ensure_golden_site(build: WordPressBuild, golden_root: Path) -> Path:
    """Return the golden ``wordpress`` directory for ``build``, building it first if needed."""
    target = golden_root / f"wp-{build.version}-v{GOLDEN_FORMAT}"
    site = target / "wordpress"
    if (target / ".complete").is_file():
        return site
    golden_root.mkdir(parents=True, exist_ok=True)
    with open(golden_root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / ".complete").is_file():
            return site
        staging = Path(tempfile.mkdtemp(prefix=".building-", dir=golden_root))
        try:
            with zipfile.ZipFile(build.zip_path) as archive:
                archive.extractall(staging / "wordpress")
            if build.assets_dir.is_dir():
                shutil.copytree(build.assets_dir, staging / "wordpress", dirs_exist_ok=True)
            (staging / "wordpress" / "wp-content" / "mu-plugins").mkdir(parents=True, exist_ok=True)
            (staging / ".complete").write_text(build.version + "\n")
            if target.exists():
                shutil.rmtree(target)
            os.replace(staging, target)
        except OSError as error:
            shutil.rmtree(staging, ignore_errors=True)
            raise SandboxError(
                f"Could not build the WordPress {build.version} site: {error}", code="golden-site-failed"
            ) from error
    return site


def copy_site(golden_site: Path, dest: Path) -> Path:
    """A private, writable copy of a golden site for one sandbox."""
    shutil.copytree(golden_site, dest, symlinks=True)
    return dest
