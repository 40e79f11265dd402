"""The native preview's HTTP side (runtime/native_preview.py): the server and the handler that relay one browser
request to the sandbox's PHP worker. Loaded when the relay gets its first connection, not at boot: a run that
never opens its preview (a one-shot ``codebox run``) does not load ``http.server`` (docs/performance.md,
"Eighteenth session")."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Protocol

from codebox_tui.errors import SandboxError
from codebox_tui.runtime.native_cgi import HOP_BY_HOP, MAX_REQUEST_BODY_BYTES, CgiRequest, CgiResponse

SOCKET_TIMEOUT_S = 30.0
# Connections served at once (each holds a thread until it is answered or times out); more are closed unread.
MAX_CONNECTIONS = 32


class Relay(Protocol):
    """What the server and its handler use of their relay (runtime/native_preview.py's ``PreviewRelay``)."""

    timeout_s: float
    slots: threading.BoundedSemaphore
    serve: Callable[[CgiRequest, float], CgiResponse] | None
    url: str
    site_url: str
    hosts: set[str]


def relay_server(listening: socket.socket, relay: Relay) -> RelayServer:
    """The HTTP server of ``relay`` on its socket, already bound and listening."""
    server = RelayServer(listening.getsockname(), _Handler, bind_and_activate=False)
    server.socket.close()  # the one made for it: the relay's own socket takes its place
    server.socket = listening
    server.server_address = listening.getsockname()
    server.relay = relay
    return server


class RelayServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False
    # socketserver's default backlog is 5: a browser opening many connections at once (or a burst of clients)
    # had its extra SYNs dropped and retried after 1, 3, 7 s. Connections past MAX_CONNECTIONS are still
    # accepted and closed unread at once.
    request_queue_size = 128
    relay: Relay
    open_connections: threading.BoundedSemaphore

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.open_connections = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def process_request(self, request: object, client_address: object) -> None:
        """A thread per connection, at most :data:`MAX_CONNECTIONS` at once: a connection past that is closed
        unread, so idle or trickling clients (slowloris) cannot pile up threads in the Codebox process."""
        if not self.open_connections.acquire(blocking=False):
            self.shutdown_request(request)  # type: ignore[arg-type]
            return
        super().process_request(request, client_address)  # type: ignore[arg-type]

    def process_request_thread(self, request: object, client_address: object) -> None:
        try:
            super().process_request_thread(request, client_address)  # type: ignore[arg-type]
        finally:
            self.open_connections.release()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request per connection: nothing to keep alive between CGI processes
    server_version = "codebox-native-preview"
    sys_version = ""
    timeout = SOCKET_TIMEOUT_S
    server: RelayServer

    def do_GET(self) -> None:
        self._relay()

    do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_GET

    def log_message(self, format: str, *args: object) -> None:
        pass  # the run's own evidence says what the browser asked for

    def _relay(self) -> None:
        relay = self.server.relay
        if (self.headers.get("Host") or "").lower() not in relay.hosts:
            # a page elsewhere that rebinds its own name to 127.0.0.1 reaches the port, but not with our name
            self._plain(421, "this preview answers only to " + " or ".join(sorted({relay.url, relay.site_url})))
            return
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            self._plain(411, "chunked request bodies are not accepted; send a Content-Length")
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self._plain(400, "bad Content-Length")
            return
        if length < 0 or length > MAX_REQUEST_BODY_BYTES:
            self._plain(413, f"request bodies are limited to {MAX_REQUEST_BODY_BYTES} bytes")
            return
        body = self.rfile.read(length) if length else b""
        if len(body) != length:
            return  # the client went away
        if relay.serve is None or not relay.slots.acquire(timeout=relay.timeout_s):
            self._plain(503, "the sandbox preview is busy")
            return
        try:
            response = relay.serve(
                CgiRequest(self.command, self.path, list(self.headers.items()), body), relay.timeout_s
            )
        except SandboxError as error:
            status = 504 if error.code == "sandbox-timeout" else (400 if error.code == "invalid-request" else 502)
            self._plain(status, error.message)
            return
        finally:
            relay.slots.release()
        self._send(response)

    def _send(self, response: CgiResponse) -> None:
        try:
            self.send_response(response.status)
            for name, values in response.headers.items():
                if name in HOP_BY_HOP:
                    continue
                for value in values:
                    self.send_header(name, value)
            if response.problems:
                self.send_header("x-codebox-problems", "; ".join(response.problems)[:500])
            self.send_header("Content-Length", str(len(response.body)))
            self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.body)
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            pass

    def _plain(self, status: int, text: str) -> None:
        self._send(CgiResponse(status, {"content-type": ["text/plain; charset=UTF-8"]}, f"codebox: {text}\n".encode()))
