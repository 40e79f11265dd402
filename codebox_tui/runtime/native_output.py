"""A confined native process's standard streams (runtime/native.py): its output read to the end on a thread
and kept up to a limit (the rest counted, docs/security-secrets.md "Limits"), its input written and closed."""

from __future__ import annotations

import codecs
import threading
from collections.abc import Callable
from typing import IO


class CappedReader:
    """Reads a stream to its end on a thread, keeping at most ``limit`` bytes (the rest is counted)."""

    def __init__(self, stream: IO[bytes], limit: int, on_text: Callable[[str], None] | None = None) -> None:
        self.kept = bytearray()
        self.total = 0
        self._stream, self._limit = stream, limit
        self._on_text = on_text
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.thread = threading.Thread(target=self._pump, name="codebox-native-output", daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        read = getattr(self._stream, "read1", self._stream.read)  # read1: what has arrived, not a full 64 KiB
        while chunk := read(65536):
            self.total += len(chunk)
            room = self._limit - len(self.kept)
            if room > 0:
                self.kept += chunk[:room]
            self._hand_on(chunk)
        self._hand_on(b"", final=True)
        self._stream.close()

    def _hand_on(self, chunk: bytes, *, final: bool = False) -> None:
        """The text read so far to ``on_text`` (a viewer's callback: its failure never stops the reading)."""
        if self._on_text is None:
            return
        try:
            text = self._decoder.decode(chunk, final=final)
            if text:
                self._on_text(text)
        except Exception:  # a display hint must never lose the output
            self._on_text = None

    def truncation(self) -> dict[str, int] | None:
        if self.total <= len(self.kept):
            return None
        return {
            "totalBytes": self.total,
            "keptBytes": len(self.kept),
            "omittedBytes": self.total - len(self.kept),
            "limitBytes": self._limit,
        }


def feed_stdin(stream: IO[bytes] | None, data: bytes) -> None:
    """Write ``data`` to a process's standard input and close it (a process that stopped reading loses the rest)."""
    if stream is None:
        return
    try:
        stream.write(data)
    except (BrokenPipeError, OSError):
        pass
    finally:
        try:
            stream.close()
        except OSError:
            pass
