"""Golden pre-installed WordPress site directories, one per shipped build, and per-sandbox copies.

A golden site is the build's zip unpacked with its static assets restored (the Playground zips
are "minified": jQuery, dashicons and wp-includes/js/dist are missing). It carries the zip's
pre-installed SQLite database, so Playground boots it with ``do-not-attempt-installing`` in about
a second instead of unzipping and installing each time. Golden sites are built once, atomically.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import subprocess
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

from codebox_tui.errors import SandboxError
from codebox_tui.runtime.core_files import write_digests
from codebox_tui.runtime.wordpress_builds import WordPressBuild

GOLDEN_FORMAT = "1"


def build_once(root: Path, target: Path, fill: Callable[[Path], None], marker: str) -> None:
    """Make the cached folder ``target`` (under ``root``) once, for every Codebox process sharing ``root``:
    ``fill`` builds it in a staging folder that is renamed into place with a ``.complete`` marker, under
    ``root/.lock``, so nobody sees a half-built one. What ``fill`` raises propagates, its staging folder removed."""
    if (target / ".complete").is_file():
        return
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / ".complete").is_file():
            return
        staging = Path(tempfile.mkdtemp(prefix=".building-", dir=root))
        try:
            fill(staging)
            (staging / ".complete").write_text(marker + "\n", encoding="ascii")
            if target.exists():
                shutil.rmtree(target)
            os.replace(staging, target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise


def ensure_golden_site(build: WordPressBuild, golden_root: Path) -> Path:
    """Return the golden ``wordpress`` directory for ``build``, building it first if needed."""
    target = golden_root / f"wp-{build.version}-v{GOLDEN_FORMAT}"

    def fill(staging: Path) -> None:
        with zipfile.ZipFile(build.zip_path) as archive:
            archive.extractall(staging / "wordpress")
        if build.assets_dir.is_dir():
            shutil.copytree(build.assets_dir, staging / "wordpress", dirs_exist_ok=True)
        (staging / "wordpress" / "wp-content" / "mu-plugins").mkdir(parents=True, exist_ok=True)
        write_digests(staging / "wordpress")  # core compared on the host after each run (runtime/core_files.py)

    try:
        build_once(golden_root, target, fill, build.version)
    except OSError as error:
        raise SandboxError(
            f"Could not build the WordPress {build.version} site: {error}", code="golden-site-failed"
        ) from error
    return target / "wordpress"


def copy_tree(source: Path, dest: Path, *, background: bool = False) -> None:
    """``cp -a`` (reflinks where the file system has them); background copies run at low priority."""
    nice = ["nice", "-n", "15"] if background and shutil.which("nice") else []
    result = subprocess.run([*nice, "cp", "-a", "--reflink=auto", str(source), str(dest)], capture_output=True)
    if result.returncode != 0:
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(source, dest, symlinks=True)


# -- opcache seed ---------------------------------------------------------------------------------
# php-wasm keeps PHP's opcache as a file cache in /internal/shared/opcache. A sandbox gets a private
# *copy* of a seed made by a clean sandbox (no user mounts, no user code: only Playground's boot and
# `require wp-load.php`), so its first WordPress load skips compiling core. Sandboxes never write to
# the seed itself: a poisoned cache entry could otherwise reach the next sandbox.
def opcache_seed(build: WordPressBuild, php: str, golden_root: Path) -> Path | None:
    """The seed's ``opcache`` directory for this build and PHP version, if one was made."""
    target = golden_root / f"opcache-{build.version}-php{php}-v{GOLDEN_FORMAT}"
    return target / "opcache" if (target / ".complete").is_file() else None


def save_opcache_seed(source: Path, build: WordPressBuild, php: str, golden_root: Path) -> None:
    """Keep a copy of a clean sandbox's opcache directory as the seed (atomic; first writer wins)."""
    target = golden_root / f"opcache-{build.version}-php{php}-v{GOLDEN_FORMAT}"
    if (target / ".complete").is_file() or not source.is_dir() or not any(source.iterdir()):
        return
    staging = Path(tempfile.mkdtemp(prefix=".opcache-", dir=golden_root))
    try:
        copy_tree(source, staging / "opcache")
        (staging / ".complete").write_text(f"{build.version} php{php}\n")
        os.rename(staging, target)
    except OSError:
        pass  # another process saved one first, or the disk is full: the seed is only an optimisation
    finally:
        shutil.rmtree(staging, ignore_errors=True)


# -- prepared site copies -------------------------------------------------------------------------
# Copying a golden site (~3,200 files) costs 0.6-1.4 s, so a sandbox takes a copy prepared ahead of
# time (a rename, instantly) and a new one is prepared in the background. Each item is a complete,
# private sandbox directory: ``wordpress/`` (the site) and ``opcache/`` (a copy of the seed).
POOL_SIZE = 2  # back-to-back runs take one while the other is still being copied
STALE_S = 3600.0


def _pool(build: WordPressBuild, php: str, golden_root: Path) -> Path:
    return golden_root / "pool" / f"wp-{build.version}-php{php}-v{GOLDEN_FORMAT}"


def has_prepared_site(build: WordPressBuild, php: str, golden_root: Path) -> bool:
    """A prepared sandbox directory is ready to take."""
    try:
        return any(_pool(build, php, golden_root).glob("ready-*"))
    except OSError:
        return False


def take_prepared_site(build: WordPressBuild, php: str, golden_root: Path, dest: Path) -> bool:
    """Move a prepared sandbox directory to ``dest`` (which must not exist). False if none is ready."""
    pool = _pool(build, php, golden_root)
    try:
        entries = sorted(pool.glob("ready-*"))
    except OSError:
        return False
    for entry in entries:
        try:
            os.rename(entry, dest)  # atomic: concurrent takers cannot get the same item
        except OSError:
            continue
        return True
    return False


def make_sandbox_dir(
    build: WordPressBuild, php: str, golden_root: Path, golden_site: Path, dest: Path, *, background: bool = False
) -> None:
    """Build a sandbox directory (site copy + opcache seed copy) at ``dest`` (which must not exist)."""
    dest.mkdir()
    copy_tree(golden_site, dest / "wordpress", background=background)
    seed = opcache_seed(build, php, golden_root)
    if seed is not None:
        copy_tree(seed, dest / "opcache", background=background)


POOL_LOCK = ".lock"  # held (flock) by the process topping a pool up: one filler at a time


def pool_lock_path(build: WordPressBuild, php: str, golden_root: Path) -> Path:
    return _pool(build, php, golden_root) / POOL_LOCK


def fill_pool(build: WordPressBuild, php: str, golden_root: Path, golden_site: Path) -> None:
    """Top the pool up to POOL_SIZE under its lock (what the detached pool worker runs: a filler that
    finds another one at work waits for it, then finds the pool full)."""
    lock = pool_lock_path(build, php, golden_root)
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        for _ in range(POOL_SIZE):  # one copy at a time, so a waiting boot wakes after the first
            prepare_site(build, php, golden_root, golden_site)
    finally:
        os.close(fd)


def pool_busy(build: WordPressBuild, php: str, golden_root: Path) -> bool:
    """A filler holds the pool's lock now (a copy is being prepared)."""
    try:
        fd = os.open(pool_lock_path(build, php, golden_root), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def prepare_site(build: WordPressBuild, php: str, golden_root: Path, golden_site: Path) -> None:
    """Top the pool up by one prepared sandbox directory, if it has fewer than POOL_SIZE (also removes
    abandoned partial ones)."""
    pool = _pool(build, php, golden_root)
    pool.mkdir(parents=True, exist_ok=True)
    for partial in pool.glob(".tmp-*"):
        try:
            if time.time() - partial.stat().st_mtime > STALE_S:
                shutil.rmtree(partial, ignore_errors=True)
        except OSError:
            pass
    if len(list(pool.glob("ready-*"))) >= POOL_SIZE:
        return
    token = secrets.token_hex(6)
    staging = pool / f".tmp-{token}"
    try:
        make_sandbox_dir(build, php, golden_root, golden_site, staging, background=True)
        os.rename(staging, pool / f"ready-{token}")
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
