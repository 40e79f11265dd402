"""How the host notices that a native sandbox's processes ended (issue #28, docs/performance.md "Eighteenth
session"): a confined PHP process's end through its pidfd (runtime/native_worker.py ``wait_for_exit``) with
``Popen.wait``'s results, and the preview relay's close (runtime/native_preview.py), which wakes its serving loop
instead of waiting for the loop's next look. Real processes and a real listening socket; no timing asserted."""

from __future__ import annotations

import socket
import subprocess
import threading
import urllib.request

import pytest

from codebox_tui.runtime.native_cgi import CgiResponse
from codebox_tui.runtime.native_preview import PreviewRelay
from codebox_tui.runtime.native_worker import wait_for_exit


def test_the_exit_status_is_the_process_s() -> None:
    process = subprocess.Popen(["sh", "-c", "exit 7"])
    assert wait_for_exit(process, 30) == 7 and process.returncode == 7


def test_a_process_still_running_at_the_timeout_is_a_timeout() -> None:
    process = subprocess.Popen(["sleep", "1"])
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            wait_for_exit(process, 0.05)
        assert process.poll() is None  # still running: the caller decides (the sandbox kills its group)
    finally:
        process.wait()  # it ends by itself (no killed processes in unit tests)


def test_a_process_already_reaped_still_gives_its_status() -> None:
    process = subprocess.Popen(["sh", "-c", "exit 3"])
    process.wait()  # reaped elsewhere (another thread's kill): no pidfd to open any more
    assert wait_for_exit(process, 30) == 3


def _relay() -> PreviewRelay:
    relay = PreviewRelay(5.0)
    relay.start(lambda request, timeout_s: CgiResponse(200, {"content-type": ["text/plain"]}, b"served"))
    return relay


def test_a_closed_relay_has_stopped_serving_and_listening() -> None:
    relay = _relay()
    with urllib.request.urlopen(relay.url + "/", timeout=30) as answer:
        assert answer.read() == b"served"
    thread = next(t for t in threading.enumerate() if t.name == f"codebox-preview-{relay.port}")
    relay.close()
    assert not thread.is_alive()  # close returns once the serving loop has ended
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", relay.port), timeout=5):
        pass


def test_a_relay_closed_without_serving_closes_its_socket() -> None:
    relay = PreviewRelay(5.0)
    relay.close()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", relay.port), timeout=5):
        pass
