"""Shared helpers of the site-state tests (tests/e2e/test_site_state.py, tests/security/test_site_state_*.py,
tests/security/test_trusted_probes.py and the other files that moved to the native backend with them)."""

from __future__ import annotations

import json
from pathlib import Path

NATIVE = "native"
PLAYGROUND = "wordpress-playground"


def bundle_backend(bundle: Path | str) -> str:
    """The backend a sealed bundle records it ran on (``metadata.json`` ``runtime.backend``), so a test that moved to
    the native backend cannot silently run on Playground, nor the other way round."""
    metadata = json.loads((Path(bundle) / "metadata.json").read_text(encoding="utf-8"))
    return str(metadata["runtime"]["backend"])


def native_run(artifacts_root: Path, **spec_kwargs: object):  # type: ignore[no-untyped-def]
    """A fresh RunSession on a real native sandbox (the host's PHP in real bubblewrap; docs/backends.md), booted
    lazily like the Playground helper's ``new_run``: ``spec_kwargs`` as tests/factories/playground.py's ``spec``.
    Use it as a context manager, or close it."""
    from codebox_tui.runtime.native import NativeBackend
    from codebox_tui.runtime.native_site import host_php
    from codebox_tui.runtime.session import RunSession
    from codebox_tui.settings import get_settings
    from tests.factories.playground import PlaygroundSession

    spec = PlaygroundSession(get_settings().home).spec(php=host_php().series, **spec_kwargs)
    return RunSession(spec, artifacts_root, backend=NativeBackend())
