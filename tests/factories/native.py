"""Real native sandboxes for tests (the host's PHP inside real bubblewrap; runtime/native.py)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.factories.held import codebox
from tests.factories.playground import PlaygroundSession


@contextmanager
def native_sandbox(settings: Any = None, **spec_kwargs: Any) -> Iterator[Any]:
    """A booted native sandbox (at the host's PHP) for the spec the Playground helper builds from
    ``spec_kwargs`` (mounts as ``HOST:SANDBOX[:mode]`` text, commands, network), disposed afterwards;
    ``settings``: other CodeboxSettings than the process's."""
    from codebox_tui.runtime.native import NativeBackend
    from codebox_tui.runtime.native_site import host_php
    from codebox_tui.settings import get_settings

    spec = PlaygroundSession(get_settings().home).spec(php=host_php().series, **spec_kwargs)
    sandbox = NativeBackend(settings).boot(spec)
    try:
        yield sandbox
    finally:
        sandbox.dispose()


def native_run(artifacts_root: Path, **spec_kwargs: Any) -> Any:
    """A fresh ``RunSession`` on the native backend at the host's PHP, for the spec the Playground helper builds
    from ``spec_kwargs`` (mounts as ``HOST:SANDBOX[:mode]`` text, commands, extra mounts); its sandbox boots at
    the first command. Use it as a context manager (as ``PlaygroundSession.new_run``) so it is disposed."""
    from codebox_tui.runtime.native import NativeBackend
    from codebox_tui.runtime.native_site import host_php
    from codebox_tui.runtime.session import RunSession
    from codebox_tui.settings import get_settings

    spec = PlaygroundSession(get_settings().home).spec(php=host_php().series, **spec_kwargs)
    return RunSession(spec, artifacts_root, backend=NativeBackend())


def run_natively(
    *args: str, home: Path | None = None, timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``codebox run --backend native ARGS`` as a user runs it (a process of its own, tests/factories/held.py's
    ``codebox``) in ``home``, by default this process's ``CODEBOX_HOME`` (the test session's), with ``env`` added."""
    home = home if home is not None else Path(os.environ["CODEBOX_HOME"])
    return codebox(home, "run", "--backend", "native", *args, timeout=timeout, env=env)


def codebox_with_tmpdir(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``codebox ARGS`` in a process of its own (tests/factories/held.py's ``codebox``, in this process's
    ``CODEBOX_HOME``) whose temporary files go to ``tmp_path/tmp`` (``TMPDIR``), with ``env`` added."""
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return codebox(
        Path(os.environ["CODEBOX_HOME"]), *args, timeout=timeout, env={"TMPDIR": str(tmp_path / "tmp"), **(env or {})}
    )


def host_php_version() -> str:
    """The host's PHP version (what a native sandbox runs)."""
    from codebox_tui.runtime.native_site import host_php

    return host_php().version


RECORDED = {"native": "native", "playground": "wordpress-playground"}  # `--backend` -> metadata.runtime.backend
NATIVE, PLAYGROUND = RECORDED["native"], RECORDED["playground"]


def recorded_backend(bundle: Path) -> str:
    """The backend a bundle says its sandbox ran on (``metadata.runtime.backend``: ``native`` or
    ``wordpress-playground``), so a test moved to one backend cannot silently run on the other."""
    return str(json.loads((Path(bundle) / "metadata.json").read_text(encoding="utf-8"))["runtime"]["backend"])


def php_string(text: str) -> str:
    """A PHP expression for ``text`` that survives any quoting."""
    return f"base64_decode('{base64.b64encode(text.encode()).decode()}')"


def raw_http(
    port: int,
    request_line: str,
    *,
    host: str = "127.0.0.1",
    headers: str = "",
    body: bytes = b"",
    timeout: float = 120.0,
    host_header: str | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """Send exactly ``request_line`` (no client normalises its path) to a preview relay, with ``Host:
    host_header`` (default: the address and port); its status, headers (lower-case names, last value wins)
    and body."""
    import socket

    with socket.create_connection((host, port), timeout=timeout) as connection:
        named = host_header if host_header is not None else f"{host}:{port}"
        connection.sendall(
            f"{request_line} HTTP/1.1\r\nHost: {named}\r\n{headers}"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )
        chunks = []
        while chunk := connection.recv(65536):
            chunks.append(chunk)
    head, _, rest = b"".join(chunks).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    found = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split(" ")[1]), found, rest


def was_reached(server: Any) -> bool:
    """Whether anything connected to the listening socket ``server`` (checked once, without waiting)."""
    server.setblocking(False)
    try:
        connection, _ = server.accept()
    except BlockingIOError:
        return False
    connection.close()
    return True
