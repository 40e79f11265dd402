"""The FastCGI client reads the worker's answer as untrusted bytes (runtime/fastcgi.py): real Unix sockets, a
scripted server on the other end playing a broken or hostile worker."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from codebox_tui.runtime.fastcgi import (
    BEGIN_REQUEST,
    END_REQUEST,
    HEADER,
    MAX_STDERR_BYTES,
    PARAMS,
    STDERR,
    STDIN,
    STDOUT,
    FastCgiError,
    encode_params,
    exchange,
    records,
)


def record(kind: int, content: bytes, *, version: int = 1, request_id: int = 1, padding: int = 0) -> bytes:
    return HEADER.pack(version, kind, request_id, len(content), padding) + content + b"\0" * padding


def end(app_status: int = 0) -> bytes:
    return record(END_REQUEST, struct.pack(">IB3x", app_status, 0))


def read_request(conn: socket.socket) -> dict[int, bytes]:
    """What the client sent, by record type (streams joined), read until the empty STDIN record."""
    got: dict[int, bytes] = {}
    buffer = b""
    while True:
        while len(buffer) < 8:
            buffer += conn.recv(65536)
        _, kind, _, length, padding = HEADER.unpack(buffer[:8])
        while len(buffer) < 8 + length + padding:
            buffer += conn.recv(65536)
        got[kind] = got.get(kind, b"") + buffer[8 : 8 + length]
        buffer = buffer[8 + length + padding :]
        if kind == STDIN and length == 0:
            return got


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[Callable[[Callable[[socket.socket], None]], str]]:
    """Start a one-connection server at a Unix socket running ``script(conn)``; its address."""
    threads: list[threading.Thread] = []

    def start(script: Callable[[socket.socket], None]) -> str:
        path = str(tmp_path / f"w{len(threads)}.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(1)

        def serve() -> None:
            conn, _ = listener.accept()
            try:
                script(conn)
            finally:
                conn.close()
                listener.close()

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        threads.append(thread)
        return path

    yield start
    for thread in threads:
        thread.join(timeout=10)


def test_a_request_round_trips_its_params_and_body(worker: Callable[..., str]) -> None:
    seen: dict[int, bytes] = {}

    def script(conn: socket.socket) -> None:
        seen.update(read_request(conn))
        conn.sendall(
            record(STDERR, b"a notice")
            + record(STDOUT, b"Status: 201\r\n\r\n")
            + record(STDOUT, b"hello", padding=3)
            + record(STDOUT, b"")
            + end(0)
        )

    long_value = "v" * 300
    answer = exchange(
        worker(script), {"REQUEST_METHOD": "POST", "LONG": long_value}, b"x" * 70000, timeout_s=10, limit=1000
    )
    assert bytes(answer.stdout) == b"Status: 201\r\n\r\nhello" and not answer.truncated
    assert bytes(answer.stderr) == b"a notice" and answer.app_status == 0
    assert seen[BEGIN_REQUEST] == struct.pack(">HB5x", 1, 0)
    assert seen[PARAMS] == encode_params({"REQUEST_METHOD": "POST", "LONG": long_value})
    assert seen[STDIN] == b"x" * 70000  # two records: over one record's 65,535 bytes


def test_long_names_and_values_use_four_byte_lengths() -> None:
    encoded = encode_params({"A": "b" * 200})
    assert encoded[:5] == bytes([1]) + struct.pack(">I", 200 | 0x80000000) and encoded.endswith(b"A" + b"b" * 200)
    assert [len(r) for r in records(STDIN, b"")] == [8]


def test_output_past_the_cap_is_cut_and_reading_stops(worker: Callable[..., str]) -> None:
    def script(conn: socket.socket) -> None:
        read_request(conn)
        try:
            for _ in range(1000):  # far more than the cap, never ended: the client must stop reading
                conn.sendall(record(STDOUT, b"o" * 60000))
        except OSError:
            pass

    answer = exchange(worker(script), {}, b"", timeout_s=30, limit=100_000)
    assert len(answer.stdout) == 100_000 and answer.truncated


def test_standard_error_is_capped(worker: Callable[..., str]) -> None:
    def script(conn: socket.socket) -> None:
        read_request(conn)
        conn.sendall(b"".join(record(STDERR, b"e" * 60000) for _ in range(5)) + record(STDOUT, b"\r\n") + end())

    answer = exchange(worker(script), {}, b"", timeout_s=10, limit=1000)
    assert len(answer.stderr) == MAX_STDERR_BYTES


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (record(STDOUT, b"x", version=2), "version 2"),
        (record(STDOUT, b"x", request_id=7), "request 7"),
        (record(9, b"x"), "type 9"),
        (record(END_REQUEST, b"\0\0"), "END_REQUEST record of 2 bytes"),
        (record(STDOUT, b"half an answer"), "closed the connection"),
        (HEADER.pack(1, STDOUT, 1, 500, 0) + b"short", "closed the connection"),
        (b"\x01\x06", "closed the connection"),
    ],
)
def test_a_worker_breaking_the_protocol_is_an_error_that_says_how(
    worker: Callable[..., str], reply: bytes, words: str
) -> None:
    def script(conn: socket.socket) -> None:
        read_request(conn)
        conn.sendall(reply)

    with pytest.raises(FastCgiError) as raised:
        exchange(worker(script), {}, b"", timeout_s=10, limit=1000)
    assert raised.value.kind == "protocol" and words in raised.value.message


def test_a_worker_that_never_answers_times_out(worker: Callable[..., str]) -> None:
    release = threading.Event()

    def script(conn: socket.socket) -> None:
        read_request(conn)
        release.wait(10)

    with pytest.raises(FastCgiError) as raised:
        exchange(worker(script), {}, b"", timeout_s=0.5, limit=1000)
    release.set()
    assert raised.value.kind == "timeout"


def test_no_worker_listening_is_a_connect_error(tmp_path: Path) -> None:
    with pytest.raises(FastCgiError) as raised:
        exchange(str(tmp_path / "absent.sock"), {}, b"", timeout_s=5, limit=1000)
    assert raised.value.kind == "connect"
