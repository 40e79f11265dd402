"""The native sandbox's preview (docs/backends.md, "Page requests and the preview"): a small HTTP relay on
the host, bound to ``127.0.0.1`` on a free port, that turns each request a browser sends into one request to
the sandbox's confined PHP worker (runtime/native_worker.py, runtime/native_cgi.py) and writes the answer
back. PHP itself never listens anywhere: its
network namespace is empty.

Bounded on every side: a few requests in flight at once (:data:`WORKERS`; a request that finds no free slot in
its timeout gets a 503), each with the run's per-request timeout (a 504 when it runs out), request bodies
capped (413 before PHP starts), slow clients dropped after :data:`SOCKET_TIMEOUT_S` and at most
:data:`MAX_CONNECTIONS` connections held at once (more are closed unread), and a request naming
another host (DNS rebinding: a page elsewhere whose name now points at 127.0.0.1) refused with a 421 — the host
of a ``--preview-public-url`` (a tunnel in front of the relay, which the user named) aside.
"""

from __future__ import annotations

import socket
import threading
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from codebox_tui.errors import SandboxError
from codebox_tui.runtime.native_cgi import (
    HOP_BY_HOP,
    MAX_REQUEST_BODY_BYTES,
    CgiRequest,
    CgiResponse,
)

BIND_ADDRESS = "127.0.0.1"  # never anything else: the preview is for this machine's browser only
WORKERS = 4
SOCKET_TIMEOUT_S = 30.0
# Connections served at once (each holds a thread until it is answered or times out); more are closed unread.
MAX_CONNECTIONS = 32
Serve = Callable[[CgiRequest, float], CgiResponse]


class PreviewRelay:
    """One sandbox's relay. Made (and its port bound) before the sandbox's configuration is written, so
    WordPress's ``home``/``siteurl`` can name :attr:`url`; serving starts with :meth:`start`."""

    def __init__(self, timeout_s: float, port: int = 0, public_url: str | None = None) -> None:
        """``port``: a fixed port (``--preview-port``), else 0 for a free one; a port in use fails the boot.
        ``public_url``: a tunnel's address in front of the relay (``--preview-public-url``): WordPress names it
        (:attr:`site_url`) and requests whose ``Host`` is its host are served too, as a tunnel forwards them."""
        self.timeout_s = timeout_s
        self.slots = threading.BoundedSemaphore(WORKERS)
        self.serve: Serve | None = None
        try:
            self._server = _Server((BIND_ADDRESS, port), _Handler)
        except OSError as error:
            raise SandboxError(
                f"the preview cannot listen on {BIND_ADDRESS}:{port}: {error.strerror or error}",
                code="preview-port-unavailable",
                details={"port": port},
            ) from None
        self._server.relay = self
        self.port = int(self._server.server_address[1])
        self.url = f"http://{BIND_ADDRESS}:{self.port}"
        self.hosts = {f"{BIND_ADDRESS}:{self.port}", f"localhost:{self.port}", *public_hosts(public_url)}
        self.site_url = public_url or self.url  # WordPress's home and siteurl
        self._thread: threading.Thread | None = None

    def start(self, serve: Serve) -> None:
        self.serve = serve
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name=f"codebox-preview-{self.port}",
            daemon=True,
        )
        self._thread.start()

    def close(self) -> None:
        """Stop listening (requests under way finish or are killed with the sandbox's processes). The serving
        loop waits up to its poll interval between looks at a stop request: shutting the listening socket down
        first wakes it at once (its accept fails and it sees the request), instead of a tenth of a second, on
        average, at the end of every native run (docs/performance.md, "Eighteenth session")."""
        if self._thread is not None:
            try:
                self._server.socket.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # the loop still sees the request at its next look
            self._server.shutdown()
            self._thread = None
        self._server.server_close()


def public_hosts(public_url: str | None) -> set[str]:
    """The ``Host`` values a request through the tunnel at ``public_url`` carries: its host and port as the URL
    names them, and with the scheme's default port spelled out when it names none."""
    if public_url is None:
        return set()
    parsed = urllib.parse.urlsplit(public_url)
    hosts = {parsed.netloc.lower()}
    if parsed.port is None:
        hosts.add(f"{parsed.netloc.lower()}:{443 if parsed.scheme == 'https' else 80}")
    return hosts


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False
    # socketserver's default backlog is 5: a browser opening many connections at once (or a burst of clients)
    # had its extra SYNs dropped and retried after 1, 3, 7 s. Connections past MAX_CONNECTIONS are still
    # accepted and closed unread at once.
    request_queue_size = 128
    relay: PreviewRelay
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
    server: _Server

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
