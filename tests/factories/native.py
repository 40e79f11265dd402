"""Real native sandboxes for tests (the host's PHP inside real bubblewrap; runtime/native.py)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.factories.playground import PlaygroundSession


@contextmanager
def native_sandbox(**spec_kwargs: Any) -> Iterator[Any]:
    """A booted native sandbox (at the host's PHP) for the spec the Playground helper builds from
    ``spec_kwargs`` (mounts as ``HOST:SANDBOX[:mode]`` text, commands, network), disposed afterwards."""
    from codebox_tui.runtime.native import NativeBackend
    from codebox_tui.runtime.native_site import host_php
    from codebox_tui.settings import get_settings

    spec = PlaygroundSession(get_settings().home).spec(php=host_php().series, **spec_kwargs)
    sandbox = NativeBackend().boot(spec)
    try:
        yield sandbox
    finally:
        sandbox.dispose()


def php_string(text: str) -> str:
    """A PHP expression for ``text`` that survives any quoting."""
    return f"base64_decode('{base64.b64encode(text.encode()).decode()}')"
