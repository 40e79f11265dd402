"""The native preview behind a public URL (`--preview-public-url`, docs/sites.md "Held previews";
docs/backends.md, "The preview"). WordPress names the tunnel's address and the relay serves requests that carry
its host name as well as its own, but nothing else: a public URL widens the names the relay answers to by
exactly that one host, never the addresses it listens on. One real native sandbox booted with a public URL:

- DNS rebinding: a page elsewhere whose name resolves to 127.0.0.1 sends its own name (bare, with a port, as a
  suffix or prefix of the public host, the public host on another port) and gets a 421 before any PHP runs;
- the relay still listens on 127.0.0.1 only: another loopback address finds nothing;
- the page sees the public URL as its host whatever name the client sent (`HTTP_HOST` is the host's, never
  the client's), so WordPress builds its links and redirects from the URL the user named.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from tests.factories.native import native_sandbox, raw_http

pytestmark = pytest.mark.native

PUBLIC_URL = "https://tunnel.example.test"
PUBLIC_HOST = "tunnel.example.test"
SEEN_HOST = (
    "<?php require '/wordpress/wp-load.php';\n"
    "echo 'host=', $_SERVER['HTTP_HOST'], ' name=', $_SERVER['SERVER_NAME'], ' home=', home_url('/');\n"
)


@pytest.fixture(scope="module")
def public_sandbox() -> Iterator[tuple[Any, int]]:
    with native_sandbox(site_url=PUBLIC_URL) as sandbox:
        yield sandbox, int(sandbox.preview_url.rsplit(":", 1)[1])


def test_only_the_public_host_is_added_to_the_names_the_relay_answers_to(public_sandbox: tuple[Any, int]) -> None:
    _, port = public_sandbox
    blank = "GET /wp-includes/images/blank.gif"
    for name in (PUBLIC_HOST, f"{PUBLIC_HOST}:443", "TUNNEL.example.test", f"127.0.0.1:{port}", f"localhost:{port}"):
        assert raw_http(port, blank, host_header=name)[0] == 200, name
    for name in (
        "rebound.example",
        f"rebound.example:{port}",
        f"{PUBLIC_HOST}.rebound.example",
        f"rebound.{PUBLIC_HOST}",
        f"{PUBLIC_HOST}:8443",
        f"{PUBLIC_HOST}:{port}",
        "example.test",
        "",
    ):
        status, _, body = raw_http(port, "GET /", host_header=name)
        assert status == 421 and b"<html" not in body.lower(), (name, status)


def test_a_public_url_does_not_widen_where_the_relay_listens(public_sandbox: tuple[Any, int]) -> None:
    _, port = public_sandbox
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.2", port), timeout=5).close()


def test_the_page_sees_the_public_url_whatever_name_the_client_sent(public_sandbox: tuple[Any, int]) -> None:
    sandbox, port = public_sandbox
    sandbox.write_file("/wordpress/wp-content/seen-host.php", SEEN_HOST.encode())
    path = "GET /wp-content/seen-host.php"
    for name in (PUBLIC_HOST, f"127.0.0.1:{port}"):
        status, _, body = raw_http(port, path, host_header=name)
        assert status == 200, (name, status, body[:300])
        assert body.decode() == f"host={PUBLIC_HOST} name={PUBLIC_HOST} home={PUBLIC_URL}/", name
