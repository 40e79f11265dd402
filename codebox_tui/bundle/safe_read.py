"""Reading files and JSON that someone else wrote (bundles, recipes, policies), without trusting them.

- :func:`open_regular` opens only a regular file: ``lstat`` first, then ``O_NOFOLLOW | O_NONBLOCK`` and an
  ``fstat`` check that the same inode was opened. A FIFO (which would block the reader forever), a device,
  a socket or a symlink is refused with :class:`UnsafeFileError`, never opened for reading.
- :func:`parse_json` refuses documents nested deeper than :data:`MAX_JSON_DEPTH` with a clear
  :class:`BadInputError` naming the file, instead of a ``RecursionError`` traceback (from the decoder or
  from any later recursive walk over the document).

See docs/security-host.md ("Host-side trust").
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from codebox_tui.errors import BadInputError

MAX_JSON_DEPTH = 128
MAX_JSON_BYTES = 64 * 1024 * 1024
_CHUNK = 1 << 20


class UnsafeFileError(OSError):
    """The path is not a regular file (a symlink, FIFO, device, socket or folder)."""


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def open_regular(path: Path | str) -> int:
    """A read-only descriptor of the regular file at ``path`` (the caller closes it)."""
    info = os.lstat(path)
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeFileError(f"{path} is {_kind(info.st_mode)}, not a regular file")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
            raise UnsafeFileError(f"{path} was replaced while being opened")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: Path | str, limit: int | None = None) -> bytes:
    """The bytes of a regular file (UnsafeFileError for anything else; OSError when larger than ``limit``)."""
    fd = open_regular(path)
    with open(fd, "rb", buffering=0) as handle:
        chunks: list[bytes] = []
        size = 0
        while chunk := handle.read(_CHUNK):
            chunks.append(chunk)
            size += len(chunk)
            if limit is not None and size > limit:
                raise OSError(f"{path} is larger than {limit} bytes")
    return b"".join(chunks)


def json_depth_exceeds(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when ``value`` nests arrays/objects deeper than ``limit`` (iterative: never recurses)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


class JsonTooDeepError(ValueError):
    """The document nests arrays/objects deeper than MAX_JSON_DEPTH."""

    def __init__(self) -> None:
        super().__init__(f"nests arrays/objects deeper than {MAX_JSON_DEPTH} levels; expected a flatter JSON document")


def loads_limited(text: str | bytes) -> Any:
    """``json.loads`` with the depth limit: JsonTooDeepError (a ValueError) instead of RecursionError."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise JsonTooDeepError() from None
    if json_depth_exceeds(value):
        raise JsonTooDeepError()
    return value


def parse_json(text: str | bytes, source: str, *, code: str = "invalid-json") -> Any:
    """Decode JSON from ``source`` (a file name or flag, used in the error) with the depth limit."""
    try:
        value = json.loads(text)
    except RecursionError:
        value = None
        too_deep = True
    except (ValueError, UnicodeDecodeError) as error:
        raise BadInputError(f"{source} is not valid JSON: {error}", code=code, field=source) from error
    else:
        too_deep = json_depth_exceeds(value)
    if too_deep:
        raise BadInputError(
            f"{source} nests arrays/objects deeper than {MAX_JSON_DEPTH} levels; expected a flatter JSON document",
            code="json-too-deep",
            field=source,
        )
    return value


def load_json_file(
    path: Path | str, source: str | None = None, *, limit: int = MAX_JSON_BYTES, code: str = "invalid-json"
) -> Any:
    """Read and decode a JSON file: regular files only, size and depth limited; BadInputError naming
    the file otherwise (``code`` for a decoding error)."""
    name = source or str(path)
    try:
        data = read_regular(path, limit)
    except FileNotFoundError as error:
        raise BadInputError(f"{name} does not exist", code="missing-file", field=name) from error
    except UnsafeFileError as error:
        raise BadInputError(f"{error}; expected a JSON file", code="unsafe-file", field=name) from error
    except OSError as error:
        raise BadInputError(f"{name} cannot be read: {error}", code="unreadable-file", field=name) from error
    return parse_json(data, name, code=code)
