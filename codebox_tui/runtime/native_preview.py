"""The native sandbox's preview (docs/backends.md, "Page requests and the preview"): a small HTTP relay on
the host, bound to ``127.0.0.1`` on a free port, that turns each request a browser sends into one request to
the sandbox's confined PHP worker (runtime/native_worker.py, runtime/native_cgi.py) and writes the answer
back. PHP itself never listens anywhere: its
network namespace is empty.

Bounded on every side: a few requests in flight at once (:data:`WORKERS`; a request that finds no free slot in
its timeout gets a 503), each with the run's per-request timeout (a 504 when it runs out), request bodies
capped (413 before PHP starts), slow clients dropped after ``SOCKET_TIMEOUT_S`` and at most
``MAX_CONNECTIONS`` connections held at once (more are closed unread; both in runtime/native_preview_http.py,
the HTTP side, loaded at the relay's first connection), and a request naming
another host (DNS rebinding: a page elsewhere whose name now points at 127.0.0.1) refused with a 421 — the host
of a ``--preview-public-url`` (a tunnel in front of the relay, which the user named) aside.
"""

from __future__ import annotations

import selectors
import socket
import threading
import urllib.parse
from collections.abc import Callable
from typing import Any

from codebox_tui.errors import SandboxError
from codebox_tui.runtime.native_cgi import CgiRequest, CgiResponse

BIND_ADDRESS = "127.0.0.1"  # never anything else: the preview is for this machine's browser only
WORKERS = 4
BACKLOG = 128  # socketserver's default of 5 dropped a browser's burst of connections (retried after 1, 3, 7 s)
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
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            self._socket.bind((BIND_ADDRESS, port))
            self._socket.listen(BACKLOG)
        except OSError as error:
            self._socket.close()
            raise SandboxError(
                f"the preview cannot listen on {BIND_ADDRESS}:{port}: {error.strerror or error}",
                code="preview-port-unavailable",
                details={"port": port},
            ) from None
        self.port = int(self._socket.getsockname()[1])
        self.url = f"http://{BIND_ADDRESS}:{self.port}"
        self.hosts = {f"{BIND_ADDRESS}:{self.port}", f"localhost:{self.port}", *public_hosts(public_url)}
        self.site_url = public_url or self.url  # WordPress's home and siteurl
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closing = False
        self._server: Any = None  # the HTTP server (runtime/native_preview_http.py), made at the first connection

    def start(self, serve: Serve) -> None:
        self.serve = serve
        self._thread = threading.Thread(target=self._run, name=f"codebox-preview-{self.port}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        """Wait for the first connection, then serve. The HTTP server and ``http.server`` load only then: a run
        whose preview nobody opens (a one-shot ``codebox run``) never loads them (docs/performance.md,
        "Eighteenth session"). The connection waits in the socket's backlog meanwhile."""
        with selectors.DefaultSelector() as waiting:
            waiting.register(self._socket, selectors.EVENT_READ)
            waiting.select()  # a connection, or close() shutting the socket down
        with self._lock:
            if self._closing:
                return
            # on demand, as the docstring says: the HTTP side of the preview is loaded at its first connection
            from codebox_tui.runtime.native_preview_http import relay_server  # noqa: PLC0415 - see above

            self._server = relay_server(self._socket, self)
        self._server.serve_forever(poll_interval=0.2)

    def close(self) -> None:
        """Stop listening (requests under way finish or are killed with the sandbox's processes). Shutting the
        listening socket down first wakes the waiting or serving loop at once, instead of at the serving loop's
        next look (a tenth of a second on average at the end of every native run; docs/performance.md,
        "Eighteenth session")."""
        with self._lock:
            self._closing = True
            server = self._server
        if self._thread is not None:
            try:
                self._socket.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # the loop still sees the request at its next look
            if server is not None:
                server.shutdown()
            self._thread.join()
            self._thread = None
        self._socket.close()


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
