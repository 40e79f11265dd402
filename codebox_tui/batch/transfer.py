"""Folders as tar bytes between the caller and Ray workers, which may not share a file system
(docs/scale-out.md, "What is shipped where").

:func:`pack_dir` packs regular files and folders only (symlinks and special files are left out, never
followed). :func:`unpack` treats the bytes as hostile — a worker's bundle holds what a sandbox wrote: only
regular files and folders, relative names without ``..``, a size and a count limit, and a destination
that must not exist yet; anything else refuses the whole archive and leaves nothing behind.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import tarfile
from pathlib import Path, PurePosixPath

from codebox_tui.errors import BadInputError, CodeboxError

MAX_INPUT_BYTES = 256 * 1024 * 1024  # one item's shipped inputs (a plugin, a recipe's folder)
MAX_BUNDLE_BYTES = 2 * 1024 * 1024 * 1024  # one bundle coming back
MAX_MEMBERS = 200_000


class TransferError(CodeboxError):
    """A shipped archive that breaks the rules above (refused whole)."""


def pack_dir(root: Path, *, exclude: tuple[str, ...] = (), limit: int = MAX_INPUT_BYTES, what: str = "folder") -> bytes:
    """``root``'s regular files and folders as an uncompressed tar (names relative to ``root``); names in
    ``exclude`` (e.g. ``.git``) are left out at any depth."""
    buffer = io.BytesIO()
    total = 0
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for current, dirs, files in os.walk(root, followlinks=False):
            dirs[:] = sorted(d for d in dirs if d not in exclude and not os.path.islink(os.path.join(current, d)))
            rel_dir = Path(current).relative_to(root)
            if rel_dir != Path("."):
                tar.add(current, arcname=rel_dir.as_posix(), recursive=False)
            for name in sorted(files):
                if name in exclude:
                    continue
                path = os.path.join(current, name)
                info = os.lstat(path)
                if not stat.S_ISREG(info.st_mode):
                    continue
                total += info.st_size
                if total > limit:
                    raise BadInputError(
                        f"the {what} {root} is larger than {limit // (1024 * 1024)} MiB; too big to ship to a worker",
                        code="input-too-large",
                        field=str(root),
                    )
                tar.add(path, arcname=(rel_dir / name).as_posix(), recursive=False)
    return buffer.getvalue()


def _checked_members(tar: tarfile.TarFile, limit: int) -> list[tarfile.TarInfo]:
    members = []
    total = 0
    for count, member in enumerate(tar, start=1):
        if count > MAX_MEMBERS:
            raise TransferError(f"more than {MAX_MEMBERS} entries", code="transfer-refused")
        name = PurePosixPath(member.name)
        if name.is_absolute() or ".." in name.parts or not name.parts or "\\" in member.name or "\x00" in member.name:
            raise TransferError(f"unsafe name {member.name!r}", code="transfer-refused")
        if not (member.isreg() or member.isdir()):
            raise TransferError(f"{member.name!r} is not a regular file or folder", code="transfer-refused")
        total += member.size
        if total > limit:
            raise TransferError(f"more than {limit} bytes", code="transfer-refused")
        members.append(member)
    return members


def unpack(data: bytes, dest: Path, *, limit: int = MAX_BUNDLE_BYTES) -> Path:
    """Unpack ``data`` into the new folder ``dest`` (its parent must exist; ``dest`` must not)."""
    try:
        dest.mkdir(mode=0o700)
    except FileExistsError:
        raise TransferError(
            f"{dest} already exists; a shipped folder never replaces one", code="transfer-refused", field=str(dest)
        ) from None
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            members = _checked_members(tar, limit)
            tar.extractall(dest, members=members, filter="data")  # also refuses what escapes dest
    except (tarfile.TarError, OSError, TransferError) as error:
        shutil.rmtree(dest, ignore_errors=True)
        if isinstance(error, TransferError):
            raise TransferError(
                f"refused a shipped archive: {error.message}", code=error.code, field=str(dest)
            ) from None
        raise TransferError(f"refused a shipped archive: {error}", code="transfer-refused", field=str(dest)) from None
    dest.chmod(0o755)
    return dest
