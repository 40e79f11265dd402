"""A small FastCGI client for the native sandbox's persistent PHP worker (docs/backends.md, "Page requests
and the preview"): one request per connection, the responder role only.

Everything the worker sends is the sandbox's and is read as untrusted bytes: every record header is checked
(version, type, request id), the standard output kept is capped (the rest is read and counted, never kept),
standard error is capped smaller, the whole exchange runs under one deadline, and a stream that ends early
or breaks the protocol is reported, never raised as anything but :class:`FastCgiError`.

The record format (FastCGI 1.0): an 8-byte header — version 1, type, request id (2 bytes), content length
(2 bytes), padding length, a reserved byte — then the content and the padding.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

VERSION = 1
BEGIN_REQUEST, ABORT_REQUEST, END_REQUEST, PARAMS, STDIN, STDOUT, STDERR = 1, 2, 3, 4, 5, 6, 7
RESPONDER = 1
REQUEST_ID = 1
HEADER = struct.Struct(">BBHHBx")
MAX_CONTENT = 65535
# Standard error of one request: kept up to this many bytes (PHP's notices when display_errors is off).
MAX_STDERR_BYTES = 64 * 1024
PROTOCOL_STATUS = {0: "request complete", 1: "cannot multiplex connections", 2: "overloaded", 3: "unknown role"}


class FastCgiError(Exception):
    """The exchange failed: ``kind`` is ``connect`` (nothing was sent), ``timeout`` (the deadline passed) or
    ``protocol`` (the worker broke the protocol or closed the connection early)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass
class FastCgiAnswer:
    """What the worker answered: its standard output (at most ``limit`` bytes kept), the total it sent,
    its standard error (capped), the application's exit status and the protocol status."""

    stdout: bytearray = field(default_factory=bytearray)
    stdout_total: int = 0
    stderr: bytearray = field(default_factory=bytearray)
    app_status: int = 0
    protocol_status: int = 0

    @property
    def truncated(self) -> bool:
        return self.stdout_total > len(self.stdout)


def encode_params(params: dict[str, str]) -> bytes:
    """Name-value pairs in FastCGI's length-prefixed form (a length under 128 in one byte, else four bytes
    with the high bit set)."""
    out = bytearray()
    for name, value in params.items():
        key, val = name.encode("utf-8", "surrogateescape"), value.encode("utf-8", "surrogateescape")
        for size in (len(key), len(val)):
            out += bytes([size]) if size < 128 else struct.pack(">I", size | 0x80000000)
        out += key + val
    return bytes(out)


def records(kind: int, data: bytes) -> Iterable[bytes]:
    """``data`` as records of ``kind`` (at most 65,535 bytes each), closed by an empty one: a stream."""
    for start in range(0, len(data), MAX_CONTENT):
        chunk = data[start : start + MAX_CONTENT]
        yield HEADER.pack(VERSION, kind, REQUEST_ID, len(chunk), 0) + chunk
    yield HEADER.pack(VERSION, kind, REQUEST_ID, 0, 0)


def request_bytes(params: dict[str, str]) -> bytes:
    """The start of a request: BEGIN_REQUEST (responder, close the connection afterwards) and the params."""
    begin = HEADER.pack(VERSION, BEGIN_REQUEST, REQUEST_ID, 8, 0) + struct.pack(">HB5x", RESPONDER, 0)
    return begin + b"".join(records(PARAMS, encode_params(params)))


def exchange(connect: str, params: dict[str, str], body: bytes, *, timeout_s: float, limit: int) -> FastCgiAnswer:
    """One request over a new connection to the Unix socket at ``connect``; the answer read until
    END_REQUEST. The request body is sent by a thread while the answer is read, so a script that prints
    before reading its input cannot stall the exchange."""
    deadline = time.monotonic() + timeout_s
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            conn.connect(connect)
        except OSError as error:
            raise FastCgiError("connect", f"the PHP worker is not listening: {error}") from error
        sender = threading.Thread(
            target=_send, args=(conn, request_bytes(params), body), daemon=True, name="codebox-fastcgi-send"
        )
        sender.start()
        return read_answer(conn, deadline, limit)
    finally:
        try:
            conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        conn.close()


def _send(conn: socket.socket, head: bytes, body: bytes) -> None:
    try:
        conn.sendall(head + b"".join(records(STDIN, body)))
    except OSError:
        pass  # the reader reports what went wrong


def read_answer(conn: socket.socket, deadline: float, limit: int) -> FastCgiAnswer:
    """Records from ``conn`` until END_REQUEST for our request id, as untrusted bytes."""
    answer = FastCgiAnswer()
    reader = _Reader(conn, deadline)
    while True:
        version, kind, request_id, length, padding = HEADER.unpack(reader.exactly(HEADER.size))
        if version != VERSION:
            raise FastCgiError("protocol", f"a record with FastCGI version {version} (expected {VERSION})")
        content = reader.exactly(length + padding)[:length]
        if request_id != REQUEST_ID:
            raise FastCgiError("protocol", f"a record for request {request_id} (expected {REQUEST_ID})")
        if kind == STDOUT:
            answer.stdout_total += length
            room = limit - len(answer.stdout)
            if room > 0:
                answer.stdout += content[:room]
            if answer.stdout_total > limit:
                return answer  # past the cap: nothing more is read (the connection is closed on the worker)
        elif kind == STDERR:
            room = MAX_STDERR_BYTES - len(answer.stderr)
            if room > 0:
                answer.stderr += content[:room]
        elif kind == END_REQUEST:
            if length < 8:
                raise FastCgiError("protocol", f"an END_REQUEST record of {length} bytes (expected 8)")
            answer.app_status, answer.protocol_status = struct.unpack(">IB3x", content[:8])
            return answer
        else:
            raise FastCgiError("protocol", f"an unexpected record of type {kind}")


class _Reader:
    """Exact reads from a socket under one deadline."""

    def __init__(self, conn: socket.socket, deadline: float) -> None:
        self._conn, self._deadline = conn, deadline
        self._buffer = bytearray()

    def exactly(self, size: int) -> bytes:
        while len(self._buffer) < size:
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise FastCgiError("timeout", "the PHP worker did not answer in time")
            self._conn.settimeout(left)
            try:
                chunk = self._conn.recv(max(65536, size - len(self._buffer)))
            except TimeoutError:
                raise FastCgiError("timeout", "the PHP worker did not answer in time") from None
            except OSError as error:
                raise FastCgiError("protocol", f"the connection to the PHP worker broke: {error}") from error
            if not chunk:
                raise FastCgiError("protocol", "the PHP worker closed the connection before the end of its answer")
            self._buffer += chunk
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data
