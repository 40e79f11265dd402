"""The host's parsing of a native page request's CGI output (runtime/native_cgi.py): every byte is the
sandbox's, so any input gives a response, never an exception, within the caps."""

from __future__ import annotations

import random

from codebox_tui.runtime.native_cgi import (
    MAX_BODY_BYTES,
    MAX_HEADER_BYTES,
    MAX_HEADERS,
    CgiRequest,
    cgi_environment,
    parse_cgi_response,
)


def test_a_well_formed_response_keeps_status_headers_and_body() -> None:
    parsed = parse_cgi_response(
        b"Status: 404 Not Found\r\nContent-type: text/html\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n<p>gone</p>"
    )
    assert (parsed.status, parsed.body, parsed.problems) == (404, b"<p>gone</p>", [])
    assert parsed.headers == {"content-type": ["text/html"], "set-cookie": ["a=1", "b=2"]}
    assert parse_cgi_response(b"Location: /x\n\n").status == 302  # RFC 3875: a Location alone redirects


def test_garbage_never_raises_and_is_reported() -> None:
    generator = random.Random(28)
    for _ in range(300):
        raw = bytes(generator.randrange(256) for _ in range(generator.randrange(0, 400)))
        parsed = parse_cgi_response(raw)
        assert 100 <= parsed.status <= 599
    assert parse_cgi_response(b"").status == 502
    assert parse_cgi_response(b"no end of headers at all").status == 502
    odd = parse_cgi_response(b"Status: banana\r\nbad line\r\nX-Ok: \x00\x01fine\x7f\r\n\r\nbody")
    assert (
        odd.status == 200
        and odd.headers == {"x-ok": ["fine"]}
        and odd.problems == ["2 malformed header line(s) skipped"]
    )


def test_header_and_body_caps() -> None:
    many = parse_cgi_response(b"".join(b"X-%d: y\r\n" % i for i in range(MAX_HEADERS + 1)) + b"\r\n")
    assert many.status == 502 and "header lines" in many.problems[0]
    huge = parse_cgi_response(b"X-Big: " + b"h" * MAX_HEADER_BYTES + b"\r\n\r\nbody")
    assert huge.status == 502 and "no end of headers" in huge.problems[0]
    long_body = parse_cgi_response(b"\r\n\r\n" + b"b" * (MAX_BODY_BYTES + 10))
    assert len(long_body.body) == MAX_BODY_BYTES and "cut at" in long_body.problems[0]


def test_request_headers_become_checked_cgi_variables() -> None:
    env = cgi_environment(
        CgiRequest(
            "POST",
            "/wp-login.php?a=1",
            [
                ("Cookie", "a=1"),
                ("Cookie", "b=2"),
                ("Content-Type", "text/plain"),
                ("Proxy", "http://evil"),
                ("Bad Name", "x"),
                ("X-Ctl", "ok\x00\x1bdone"),
            ],
            b"body",
        ),
        host="127.0.0.1",
        port=4242,
    )
    assert env["HTTP_COOKIE"] == "a=1; b=2" and env["CONTENT_TYPE"] == "text/plain"
    assert env["CONTENT_LENGTH"] == "4" and env["QUERY_STRING"] == "a=1" and env["HTTP_HOST"] == "127.0.0.1:4242"
    assert "HTTP_PROXY" not in env and env["HTTP_X_CTL"] == "okdone"
    assert not any(name.startswith("HTTP_BAD") for name in env)
