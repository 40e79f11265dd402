"""What every verification step shares: the violation collector, safe bundle paths and file reads."""

from __future__ import annotations

import json
import os
import posixpath
import re
import stat
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from codebox_tui.bundle import layout
from codebox_tui.bundle.digests import file_sha256
from codebox_tui.bundle.safe_read import json_depth_exceeds, read_regular
from codebox_tui.contracts.bundle import (
    Violation,
)

HEX64 = re.compile(r"^[a-f0-9]{64}$")
TYPED_ARTIFACTS_INDEX_SCHEMA = "wp-codebox/typed-artifacts-index/v1"
TOOL_CALL_TRANSCRIPT_SCHEMA = "wp-codebox/tool-call-transcript/v1"
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def path_problem(path: Any) -> str | None:
    """Why a bundle-relative path is unsafe, or None."""
    if not isinstance(path, str) or not path:
        return "path is empty"
    if "\\" in path:
        return "path contains a backslash"
    if path.startswith("/"):
        return "path is absolute"
    if _SCHEME.match(path):
        return "path starts with a URI scheme or drive"
    normalized = posixpath.normpath(path)
    if normalized == ".." or normalized.startswith("../") or ".." in path.split("/"):
        return "path escapes the bundle"
    if "\x00" in path:
        return "path contains a NUL byte"
    return None


def dot_segment(path: str) -> bool:
    """True when a path that passed ``path_problem`` still has a ``.`` segment (``./x``, ``a/./b``). Such a path is
    not rejected as invalid, but the reference resolves every path it hashes through its artifact-path resolver,
    which refuses ``.`` segments: its per-file hash and Mode B digest fail on it, so ours must too."""
    return "." in [segment for segment in path.strip().split("/") if segment]


class Checker:
    def __init__(self, bundle: Path) -> None:
        self.bundle = bundle
        self.violations: list[Violation] = []
        self._hashes: dict[str, str | None] = {}
        self.regular: set[str] = set()  # listed paths that passed the topology checks (regular, inside, 1 link)

    def add(self, code: str, path: str, message: str, **extra: Any) -> None:
        self.violations.append(Violation(code=code, path=path, message=message, **extra))

    def remember(self, path: str, digest: str | None) -> None:
        self._hashes[path] = digest

    def sha256_of(self, path: str) -> str | None:
        """sha256 of a listed file's bytes on disk (each file hashed once per run); None when unreadable or when
        the path is not a regular file inside the bundle (never follow a symlink to hash something outside)."""
        if path not in self.regular:
            return None
        if path not in self._hashes:
            try:
                self._hashes[path] = file_sha256(self.bundle / path, follow_symlinks=False)
            except OSError:
                self._hashes[path] = None
        return self._hashes[path]


_LOCAL_HOSTS = frozenset({"localhost", "0.0.0.0", "::1", "[::1]"})


def reviewer_url_problem(url: Any) -> tuple[str, str] | None:
    """(code, why) when a URL shown to reviewers is unusable or points at this machine (spec §2), else None."""
    if not isinstance(url, str):
        return ("malformed-reference", "URL must be a string")
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
    except ValueError:
        return ("malformed-reference", f"{url!r} is not an absolute URL")
    if not parts.scheme or not _SCHEME.match(url):
        return ("malformed-reference", f"{url!r} is not an absolute URL")
    if parts.scheme.lower() not in ("http", "https"):
        return ("unsafe-file", f"{url!r} must use http or https")
    if not host:
        return ("malformed-reference", f"{url!r} has no host")
    if host in _LOCAL_HOSTS or host.startswith("127.") or host == "local" or host.endswith(".local"):
        return ("unsafe-file", f"{url!r} points at a local host")
    return None


def list_bundle(bundle: Path) -> list[str]:
    found = []
    for root, dirs, names in os.walk(bundle, followlinks=False):
        for name in list(dirs):
            full = os.path.join(root, name)
            if os.path.islink(full):
                found.append(os.path.relpath(full, bundle).replace(os.sep, "/"))
                dirs.remove(name)
        for name in names:
            found.append(os.path.relpath(os.path.join(root, name), bundle).replace(os.sep, "/"))
    return sorted(found)


def load_json(bundle: Path, rel: str) -> Any:
    """A listed JSON document, or None when it is not a regular file, unreadable, invalid or nested deeper
    than MAX_JSON_DEPTH (each caller reports None as its own violation)."""
    try:
        value = json.loads(read_regular(bundle / rel).decode("utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: absurdly deep nesting
        return None
    return None if json_depth_exceeds(value) else value


def regular_inside(bundle: Path, rel: str) -> bool:
    """``rel`` is a regular file (not a symlink) whose real path is inside the bundle: safe to read even when
    it is not listed (the reference reads metadata.json and files/review.json whether listed or not)."""
    if path_problem(rel):
        return False
    try:
        full = bundle / rel
        if not stat.S_ISREG(full.lstat().st_mode):
            return False
        inside = os.path.relpath(full.resolve(strict=True), bundle.resolve(strict=True))
    except OSError:
        return False
    return not (inside == ".." or inside.startswith("../") or os.path.isabs(inside))


def reference_listed(check: Checker, listed: dict[str, dict[str, Any]], ref: str, where: str) -> bool:
    """The reference's artifact-reference rule: a safe path (``invalid-path``) that the manifest lists
    (``malformed-reference``)."""
    why = path_problem(ref)
    if why:
        check.add("invalid-path", where, f"{ref!r}: {why}", file=ref)
        return False
    if ref not in listed:
        check.add("malformed-reference", where, f"{ref} is not listed in {layout.MANIFEST}", file=ref)
        return False
    return True
