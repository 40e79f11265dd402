"""Choosing the runtime backend in tests the way a user does without a flag (the `CODEBOX_BACKEND` setting, which
the CLI and the TUI forms' Backend field both start from; docs/backends.md), and checking which one a bundle
records, so a test moved to the native backend cannot silently run on the other one."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from codebox_tui.settings import reload_settings
from tests.factories.native import RECORDED, recorded_backend


@contextmanager
def backend_setting(name: str) -> Iterator[str]:
    """``CODEBOX_BACKEND=name`` for this process and the child processes it starts (settings reloaded); the
    previous value and settings are put back afterwards."""
    old = os.environ.get("CODEBOX_BACKEND")
    os.environ["CODEBOX_BACKEND"] = name
    reload_settings()
    try:
        yield name
    finally:
        if old is None:
            os.environ.pop("CODEBOX_BACKEND", None)
        else:
            os.environ["CODEBOX_BACKEND"] = old
        reload_settings()


def recorded_backend_option(bundle: Path) -> str:
    """The backend a run bundle says it ran on, as the option names it (``native`` or ``playground``)."""
    recorded = recorded_backend(bundle)
    return next(name for name, value in RECORDED.items() if value == recorded)
