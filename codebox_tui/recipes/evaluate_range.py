"""``evaluate-patch --git BASE..HEAD``: the review of a branch of the plugin's own repository
(docs/evaluate-patch.md, "A git range").

The before side is the plugin's files at BASE (``git archive`` of the plugin's folder, extracted with tarfile's
``data`` filter) with the work tree's untracked and ignored files laid over it (a Composer ``vendor/`` the suite
needs; never ``.git``, never a path BASE or the range tracks, links copied as links), the patch is
``git diff --binary BASE HEAD`` of that folder; then it is evaluated exactly as a patch file. ``--git COMMIT``
means ``COMMIT^..COMMIT``. Git runs hardened (bundle/hostgit.py).
"""

from __future__ import annotations

import io
import os
import posixpath
import re
import shutil
import stat
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from codebox_tui.bundle.hostgit import HostGit
from codebox_tui.errors import BadInputError
from codebox_tui.recipes.evaluate_patch import check_slug, evaluate_patch
from codebox_tui.runtime.backends import backend_name, check_php
from codebox_tui.runtime.wordpress_builds import resolve_build

MAX_ARCHIVE_BYTES = 512 * 1024 * 1024
_REV = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/~^@{}-]{0,199}")


def _bad(message: str, code: str = "invalid-git-range") -> BadInputError:
    return BadInputError(message, code=code, field="--git")


def parse_range(text: str) -> tuple[str, str]:
    """``BASE..HEAD`` → (BASE, HEAD); ``COMMIT`` → (COMMIT^, COMMIT). A symmetric ``...`` range, an empty side or
    anything that is not a revision name is refused."""
    if "..." in text:
        raise _bad(f"--git {text!r}: a symmetric range (A...B) is ambiguous; give BASE..HEAD or one commit")
    base, sep, head = text.partition("..")
    if not sep:
        base, head = f"{text}^", text
    for rev in (base, head):
        if not _REV.fullmatch(rev) or ".." in rev:
            raise _bad(f"--git {text!r}: expected BASE..HEAD or one commit (e.g. main..fix-123 or a1b2c3d)")
    return base, head


def check_evaluation_backend(backend: str | None) -> str:
    """The backend an evaluation runs on (``None``: ``CODEBOX_BACKEND``; an unknown name is a BadInputError whose
    ``field`` is ``backend``). Both backends evaluate: the native one serves the probes' pages through its own
    preview (docs/backends.md)."""
    return backend_name(backend)


def check_evaluation_inputs(
    plugin_dir: Path,
    patch_file: Path | None,
    git_range: str | None,
    *,
    wp: str,
    php: str | None,
    backend: str | None = None,
) -> None:
    """What ``evaluate-patch`` and the TUI's "Evaluate a patch" form check before anything boots: exactly one of
    a patch file and a git range, the plugin folder, the patch file, the range's form, the backend, the
    WordPress and PHP versions (a BadInputError whose ``field`` is the option at fault; ``php`` None: the
    backend's default)."""
    chosen = check_evaluation_backend(backend)
    if (patch_file is None) == (git_range is None):
        raise BadInputError(
            "give exactly one of --patch FILE and --git BASE..HEAD", code="invalid-arg", field="--patch"
        )
    plugin = plugin_dir.expanduser().resolve()
    single_file = plugin.is_file() and plugin.suffix == ".php"  # a single-file must-use plugin
    if not plugin.is_dir() and not single_file:
        raise BadInputError(
            f"plugin directory not found: {plugin} (expected a plugin folder, or a single-file "
            "must-use plugin ending in .php)",
            code="missing-source",
            field="--plugin",
        )
    if single_file and git_range is not None:
        raise BadInputError(
            "--git evaluates a range of a plugin folder's own repository; a single .php file takes --patch FILE",
            code="invalid-arg",
            field="--git",
        )
    if patch_file is not None and not patch_file.expanduser().is_file():
        raise BadInputError(f"patch file not found: {patch_file}", code="missing-source", field="--patch")
    if git_range is not None:
        parse_range(git_range)
    resolve_build(wp)  # unknown versions fail before anything boots
    if php is not None:
        check_php(chosen, php)


def _git(repo: Path) -> Any:
    return HostGit(repo)


def _commit(git: Any, rev: str, text: str) -> str:
    done = git.run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}", timeout=60)
    if done.returncode != 0:
        raise _bad(f"--git {text!r}: {rev!r} is not a commit of {git.cwd}")
    return str(done.stdout.decode().strip())


def export_range(plugin_dir: Path, text: str, scratch: Path, slug: str) -> tuple[Path, Path, dict[str, str]]:
    """The plugin's folder at BASE (``scratch/<slug>``), the range's patch file and the ``source`` record."""
    plugin_dir = plugin_dir.resolve()
    if not plugin_dir.is_dir():
        raise BadInputError(f"plugin directory not found: {plugin_dir}", code="missing-source", field="--plugin")
    base_rev, head_rev = parse_range(text)
    git = _git(plugin_dir)
    inside = git.run("rev-parse", "--show-prefix", timeout=60)
    if inside.returncode != 0:
        raise BadInputError(
            f"--git needs --plugin to be in a git repository; {plugin_dir} is not",
            code="not-a-git-repository",
            field="--plugin",
        )
    base, head = _commit(git, base_rev, text), _commit(git, head_rev, text)
    if base == head:
        raise _bad(f"--git {text!r}: BASE and HEAD are the same commit; there is nothing to evaluate")
    dirty = git.run("status", "--porcelain", "--untracked-files=no", "--", ".", timeout=120)
    if dirty.returncode != 0 or dirty.stdout.strip():
        raise _bad(
            f"--git {text!r}: {plugin_dir} has uncommitted changes, which the range would leave out; "
            "commit or stash them first",
            code="dirty-work-tree",
        )
    patch = git.run(
        "diff",
        "--binary",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--relative",
        base,
        head,
        "--",
        ".",
        timeout=300,
    )
    if patch.returncode != 0:
        raise _bad(f"--git {text!r}: git diff failed: {patch.stderr.decode(errors='replace')[:300]}")
    if not patch.stdout.strip():
        raise _bad(f"--git {text!r}: the range changes nothing in {plugin_dir}", code="empty-range")
    # run in the plugin's folder, git archive exports only that folder, by paths relative to it
    archive = git.run("archive", "--format=tar", base, timeout=300)
    if archive.returncode != 0 or len(archive.stdout) > MAX_ARCHIVE_BYTES:
        raise _bad(
            f"--git {text!r}: git archive of {base[:12]} failed: "
            f"{archive.stderr.decode(errors='replace')[:300] or 'the archive is too large'}"
        )
    target = scratch / slug
    target.mkdir()
    try:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(target, filter="data")  # no absolute paths, no escaping links, no devices
    except (tarfile.TarError, OSError) as error:  # FilterError is a TarError
        raise _bad(
            f"--git {text!r}: the plugin's files at {base[:12]} cannot be exported safely: {error}",
            code="unsafe-git-tree",
        ) from error
    try:
        overlay_untracked(git, plugin_dir, target, _tracked(git, base, head, text), text)
    except OSError as error:
        raise _bad(
            f"--git {text!r}: the work tree's untracked files cannot be copied: {error}", code="unsafe-git-tree"
        ) from error
    patch_file = scratch / f"{base[:12]}..{head[:12]}.patch"
    patch_file.write_bytes(patch.stdout)
    return target, patch_file, {"repository": str(plugin_dir), "range": text, "base": base, "head": head}


def _names(git: Any, text: str, *args: str) -> list[str]:
    done = git.run(*args, timeout=300)
    if done.returncode != 0:
        raise _bad(f"--git {text!r}: git {args[0]} failed: {done.stderr.decode(errors='replace')[:300]}")
    return [name.decode("utf-8", "surrogateescape") for name in done.stdout.split(b"\0") if name]


def _tracked(git: Any, base: str, head: str, text: str) -> set[str]:
    """Every path (relative to the plugin folder) that BASE tracks or the range changes."""
    at_base = _names(git, text, "ls-tree", "-r", "-z", "--name-only", base, "--", ".")
    changed = _names(git, text, "diff", "-z", "--name-only", "--no-renames", "--relative", base, head, "--", ".")
    return set(at_base) | set(changed)


def overlay_paths(untracked: list[str], tracked: set[str]) -> list[str]:
    """The rule of what the work tree adds to BASE (docs/evaluate-patch.md, "A git range"): each untracked or
    ignored path, except anything in ``.git``, a nested repository (``dir/``), a path BASE or the range tracks,
    and a path that would need a tracked file to be a folder (or a tracked path's folder to be a file). A path
    that is absolute or climbs out of the folder is refused."""
    tracked_dirs = {posixpath.dirname(p) for p in tracked}
    tracked_dirs |= {d for p in list(tracked_dirs) for d in _parents(p)}
    keep: list[str] = []
    for path in untracked:
        if path.endswith("/"):
            continue  # a nested repository or a folder git did not descend into
        parts = path.split("/")
        if path.startswith("/") or any(part in ("", ".", "..") for part in parts):
            raise _bad(
                f"git listed the untracked path {path!r}, which is not inside the plugin folder", code="unsafe-git-tree"
            )
        if ".git" in parts or path in tracked or path in tracked_dirs:
            continue
        if any(parent in tracked for parent in _parents(path)):
            continue
        keep.append(path)
    return sorted(keep)


def _parents(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def overlay_untracked(git: Any, plugin_dir: Path, target: Path, tracked: set[str], text: str) -> list[str]:
    """Copy the work tree's untracked and ignored files (``git ls-files --others``, ignored included) into the
    export, by :func:`overlay_paths`: regular files by content (opened without following a link), links as
    links (refused when they point out of the plugin folder, as the BASE export refuses them); other kinds
    (sockets, fifos) are left out. Returns the copied paths."""
    untracked = _names(git, text, "ls-files", "-z", "--others", "--", ".")
    copied: list[str] = []
    total = 0
    for path in overlay_paths(untracked, tracked):
        source = plugin_dir / path
        dest = target / path
        try:
            info = os.lstat(source)
        except FileNotFoundError:
            continue  # removed since git listed it
        if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
            continue
        _make_parents(target, path, text)
        if stat.S_ISLNK(info.st_mode):
            link = os.readlink(source)
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), link))
            if posixpath.isabs(link) or resolved == ".." or resolved.startswith("../"):
                raise _bad(
                    f"--git {text!r}: the untracked link {path} points out of the plugin folder "
                    f"({link}); it is not copied into the sandbox",
                    code="unsafe-git-tree",
                )
            os.symlink(link, dest)
        else:
            total += info.st_size
            if total > MAX_ARCHIVE_BYTES:
                raise _bad(f"--git {text!r}: the untracked and ignored files exceed {MAX_ARCHIVE_BYTES} bytes")
            fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
            with open(fd, "rb") as src:
                if not stat.S_ISREG(os.fstat(src.fileno()).st_mode):
                    continue  # replaced by something else since the lstat
                with open(dest, "xb") as out:
                    shutil.copyfileobj(src, out)
            os.chmod(dest, 0o755 if info.st_mode & 0o111 else 0o644)
        copied.append(path)
    return copied


def _make_parents(target: Path, path: str, text: str) -> None:
    """The folders of ``path`` inside the export, each a real folder (never through a link)."""
    folder = target
    for part in path.split("/")[:-1]:
        folder = folder / part
        try:
            info = os.lstat(folder)
        except FileNotFoundError:
            os.mkdir(folder)
            continue
        if not stat.S_ISDIR(info.st_mode):
            raise _bad(
                f"--git {text!r}: the untracked {path} needs {folder.relative_to(target)} to be a folder",
                code="unsafe-git-tree",
            )


def evaluate_git_range(plugin_dir: Path, text: str, *, slug: str | None = None, **options: Any) -> dict[str, Any]:
    """Evaluate a range of the plugin's repository as :func:`evaluate_patch` evaluates a patch file."""
    name = check_slug(slug) if slug is not None else plugin_dir.resolve().name
    scratch = Path(tempfile.mkdtemp(prefix="codebox-evaluate-range-"))
    try:
        exported, patch_file, source = export_range(plugin_dir, text, scratch, name)
        return evaluate_patch(exported, patch_file, slug=name, source=source, **options)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
