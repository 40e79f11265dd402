"""Writing the changed files' after-state copies into the bundle fast: a tar stream into one ``tar``
process (or plain writes where tar must not be used), and hashing many baseline files in parallel child
processes (``sha256sum``)."""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import tarfile
import threading
import time

from codebox_tui.bundle import layout


def ustar_header(name: str, size: int, mode: int, mtime: int, typeflag: bytes) -> bytes | None:
    """A POSIX ustar header (what ``tarfile`` writes in USTAR_FORMAT, ~10x cheaper to build), or None
    when the name needs more than ustar's 100 plain-ASCII bytes (``tarfile``'s pax headers then)."""
    if typeflag == tarfile.DIRTYPE and not name.endswith("/"):
        name += "/"  # as tarfile names folders
    raw = name.encode("ascii", "strict") if name.isascii() else b""
    if not raw or len(raw) > 100 or size >= 8**11 or mtime >= 8**11:
        return None
    header = bytearray(512)
    header[0 : len(raw)] = raw
    header[100:148] = b"%07o\x00%07o\x00%07o\x00%011o\x00%011o\x00" % (mode, 0, 0, size, mtime)
    header[148:156] = b"        "
    header[156:157] = typeflag
    header[257:265] = b"ustar\x0000"
    header[148:156] = b"%06o\x00 " % sum(header)
    return bytes(header)


class CopyWriter:
    """Writes the captured copies (``files/mounts/<i>/<rel>``) through one ``tar -x`` child process.

    Creating hundreds of files and folders is the slow part of a capture (each creation is a kernel
    call that costs 20 µs to over 300 µs on a busy ext4). A child process does it on the other core,
    outside Python's GIL, while this process diffs and writes the JSON documents: worker threads were
    tried first and lose to GIL hand-offs once creations get slow (every syscall return waits for the
    GIL, and the main thread's own work stalls behind them). The stream is made here from names this
    capture chose (mount-relative paths of regular files) and fed by one thread in large chunks.
    Without ``tar`` (or with a name tar cannot carry) the copy is written in-process. ``wait`` raises if
    any copy could not be written (e.g. a full disk)."""

    CHUNK = 256 * 1024

    def __init__(self, run_dir: str, *, use_tar: bool) -> None:
        self._run_dir = run_dir
        self._tar = shutil.which("tar") if use_tar else None
        self._proc: subprocess.Popen[bytes] | None = None
        self._feeder: threading.Thread | None = None
        self._queue: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._buffer = bytearray()
        self._error: BaseException | None = None
        self._mtime = int(time.time())
        self._folders: set[str] = set()  # folders already in the stream

    def add(self, rel: str, data: bytes) -> None:
        if self._tar is None or not rel.isascii() or "\n" in rel:
            write_copy(os.path.join(self._run_dir, rel), data)
            return
        if self._proc is None:
            self._start()
        # each folder once, before its files: tar then makes it with one mkdir (without folder entries,
        # GNU tar first fails to open the file, then walks up with mkdir per missing parent)
        missing: list[str] = []
        folder = os.path.dirname(rel)
        while folder and folder not in self._folders:
            missing.append(folder)
            folder = os.path.dirname(folder)
        for folder in reversed(missing):
            self._buffer += self._header(folder, 0, 0o755, tarfile.DIRTYPE)
            self._folders.add(folder)
        self._buffer += self._header(rel, len(data), 0o644, tarfile.REGTYPE)
        self._buffer += data
        if len(data) % tarfile.BLOCKSIZE:
            self._buffer += bytes(tarfile.BLOCKSIZE - len(data) % tarfile.BLOCKSIZE)
        if len(self._buffer) >= self.CHUNK:
            self._queue.put(bytes(self._buffer))
            self._buffer.clear()

    def _header(self, name: str, size: int, mode: int, typeflag: bytes) -> bytes:
        fast = ustar_header(name, size, mode, self._mtime, typeflag)
        if fast is not None:
            return fast
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime, info.type = size, mode, self._mtime, typeflag
        return info.tobuf(format=tarfile.PAX_FORMAT)

    def _start(self) -> None:
        assert self._tar is not None
        self._proc = subprocess.Popen(
            [self._tar, "-x", "-m", "--no-same-owner", "--no-overwrite-dir", "-f", "-", "-C", self._run_dir],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self._feeder = threading.Thread(target=self._feed, name="codebox-capture-copies", daemon=True)
        self._feeder.start()

    def _feed(self) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        stdin = self._proc.stdin
        try:
            while (chunk := self._queue.get()) is not None:
                stdin.write(chunk)
        except BaseException as exc:
            self._error = exc
        finally:
            try:
                stdin.close()
            except OSError:
                pass

    def wait(self) -> None:
        if self._proc is None:
            return
        proc, self._proc = self._proc, None
        self._buffer += bytes(2 * tarfile.BLOCKSIZE)  # end of archive
        self._queue.put(bytes(self._buffer))
        self._buffer.clear()
        self._queue.put(None)
        assert self._feeder is not None
        self._feeder.join()
        stderr = proc.stderr.read() if proc.stderr else b""
        code = proc.wait()
        if proc.stderr:
            proc.stderr.close()
        if code != 0 or self._error is not None:
            raise OSError(
                f"writing the captured copies under {self._run_dir}/{layout.MOUNT_COPIES_DIR} failed: "
                f"{stderr.decode(errors='replace').strip() or self._error}"
            )

    def close(self) -> None:
        if self._proc is not None:
            self._queue.put(None)
            if self._feeder is not None:
                self._feeder.join()
            self._proc.kill()
            self._proc.wait()
            if self._proc.stderr:
                self._proc.stderr.close()
            self._proc = None


def write_copy(dest: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest, "wb", buffering=0) as handle:
        handle.write(data)


def read_source(path: str) -> bytes:
    """A listed regular file's bytes; never through a link (a file swapped for a symlink since the
    listing fails with ELOOP and is reported unreadable)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    with open(fd, "rb", buffering=0) as handle:
        return handle.readall()


# Below this many files the in-process loop is as fast as starting children.
PREHASH_MIN_FILES = 256
_PREHASH_ARGS_BYTES = 96 * 1024  # per child: far below ARG_MAX


def prehash(root: str, rels: list[str]) -> dict[str, str]:
    """sha256 of many files at once by ``sha256sum`` children (C speed, one per core), for files capture
    cannot trust by stat signature and would otherwise read and hash one by one in Python. Only used to
    recognise files equal to their baseline (anything else is read here as usual); a file it cannot
    read is simply left out. Without ``sha256sum``: an empty result."""
    exe = shutil.which("sha256sum")
    if exe is None or len(rels) < PREHASH_MIN_FILES:
        return {}
    chunks: list[list[str]] = [[]]
    size = 0
    for rel in rels:
        if size > _PREHASH_ARGS_BYTES:
            chunks.append([])
            size = 0
        chunks[-1].append(f"./{rel}")
        size += len(rel) + 3
    results: dict[str, str] = {}
    workers = max(1, min(len(chunks), os.cpu_count() or 1))
    running: list[subprocess.Popen[bytes]] = []
    try:
        for start in range(0, len(chunks), workers):
            running = [
                subprocess.Popen([exe, "-z", "--", *chunk], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
                for chunk in chunks[start : start + workers]
            ]
            for proc in running:
                out, _ = proc.communicate(timeout=600)
                for record in out.split(b"\0"):
                    # "<64 hex>  ./<path>" (or " *" in binary mode); -z: names are never escaped
                    if len(record) > 68 and record[64:68] in (b"  ./", b" *./"):
                        results[os.fsdecode(record[68:])] = record[:64].decode("ascii")
            running = []
    except (OSError, subprocess.SubprocessError, UnicodeDecodeError):
        for proc in running:
            proc.kill()
            proc.wait()
        return {}
    return results
