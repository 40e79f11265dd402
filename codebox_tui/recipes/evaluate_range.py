"""``evaluate-patch --git BASE..HEAD``: the review of a branch of the plugin's own repository
(docs/evaluate-patch.md, "A git range").

The before side is the plugin's files at BASE (``git archive`` of the plugin's folder, extracted with tarfile's
``data`` filter), the patch is ``git diff --binary BASE HEAD`` of that folder; then it is evaluated exactly as a
patch file. ``--git COMMIT`` means ``COMMIT^..COMMIT``. Git runs hardened (bundle/hostgit.py).
"""

from __future__ import annotations

import io
import re
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from codebox_tui.errors import BadInputError

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


def check_evaluation_inputs(plugin_dir: Path, patch_file: Path | None, git_range: str | None, *, wp: str,
                            php: str) -> None:
    """What ``evaluate-patch`` and the TUI's "Evaluate a patch" form check before anything boots: exactly one of
    a patch file and a git range, the plugin folder, the patch file, the range's form, the WordPress and PHP
    versions (a BadInputError whose ``field`` is the option at fault)."""
    from codebox_tui.runtime.playground import SUPPORTED_PHP
    from codebox_tui.runtime.wordpress_builds import resolve_build

    if (patch_file is None) == (git_range is None):
        raise BadInputError("give exactly one of --patch FILE and --git BASE..HEAD", code="invalid-arg",
                            field="--patch")
    if not plugin_dir.expanduser().resolve().is_dir():
        raise BadInputError(f"plugin directory not found: {plugin_dir.expanduser().resolve()}",
                            code="missing-source", field="--plugin")
    if patch_file is not None and not patch_file.expanduser().is_file():
        raise BadInputError(f"patch file not found: {patch_file}", code="missing-source", field="--patch")
    if git_range is not None:
        parse_range(git_range)
    resolve_build(wp)  # unknown versions fail before anything boots
    if php not in SUPPORTED_PHP:
        raise BadInputError(f"--php {php} is not available; choose one of {', '.join(SUPPORTED_PHP)}",
                            code="unknown-php-version", field="--php")


def _git(repo: Path) -> Any:
    from codebox_tui.bundle.hostgit import HostGit  # the one hardened way to run git (docs/security-host.md)

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
        raise BadInputError(f"--git needs --plugin to be in a git repository; {plugin_dir} is not",
                            code="not-a-git-repository", field="--plugin")
    prefix = inside.stdout.decode().strip()
    base, head = _commit(git, base_rev, text), _commit(git, head_rev, text)
    if base == head:
        raise _bad(f"--git {text!r}: BASE and HEAD are the same commit; there is nothing to evaluate")
    dirty = git.run("status", "--porcelain", "--untracked-files=no", "--", ".", timeout=120)
    if dirty.returncode != 0 or dirty.stdout.strip():
        raise _bad(f"--git {text!r}: {plugin_dir} has uncommitted changes, which the range would leave out; "
                   "commit or stash them first", code="dirty-work-tree")
    patch = git.run("diff", "--binary", "--no-color", "--no-ext-diff", "--no-textconv", "--relative", base, head,
                    "--", ".", timeout=300)
    if patch.returncode != 0:
        raise _bad(f"--git {text!r}: git diff failed: {patch.stderr.decode(errors='replace')[:300]}")
    if not patch.stdout.strip():
        raise _bad(f"--git {text!r}: the range changes nothing in {plugin_dir}", code="empty-range")
    archive = git.run("archive", "--format=tar", f"{base}:{prefix}" if prefix else base, timeout=300)
    if archive.returncode != 0 or len(archive.stdout) > MAX_ARCHIVE_BYTES:
        raise _bad(f"--git {text!r}: git archive of {base[:12]} failed: "
                   f"{archive.stderr.decode(errors='replace')[:300] or 'the archive is too large'}")
    target = scratch / slug
    target.mkdir()
    try:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(target, filter="data")  # no absolute paths, no escaping links, no devices
    except (tarfile.TarError, OSError) as error:  # FilterError is a TarError
        raise _bad(f"--git {text!r}: the plugin's files at {base[:12]} cannot be exported safely: {error}",
                   code="unsafe-git-tree") from error
    patch_file = scratch / f"{base[:12]}..{head[:12]}.patch"
    patch_file.write_bytes(patch.stdout)
    return target, patch_file, {"repository": str(plugin_dir), "range": text, "base": base, "head": head}


def evaluate_git_range(plugin_dir: Path, text: str, *, slug: str | None = None, **options: Any) -> dict[str, Any]:
    """Evaluate a range of the plugin's repository as :func:`evaluate_patch` evaluates a patch file."""
    from codebox_tui.recipes.evaluate_patch import check_slug, evaluate_patch

    name = check_slug(slug) if slug is not None else plugin_dir.resolve().name
    scratch = Path(tempfile.mkdtemp(prefix="codebox-evaluate-range-"))
    try:
        exported, patch_file, source = export_range(plugin_dir, text, scratch, name)
        return evaluate_patch(exported, patch_file, slug=name, source=source, **options)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
