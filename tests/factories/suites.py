"""Native runs for the plugin-suite, evaluate-patch, WP-CLI and recipe tests: the host's PHP inside real
bubblewrap on a real SQLite site (docs/backends.md), several times cheaper than Playground, and the check that a
bundle records the backend it really ran on (so a test moved to native cannot silently run on Playground)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.factories.native import RECORDED, recorded_backend


def printed_bundle(stdout: str) -> Path | None:
    """The bundle a CLI command printed: ``bundleDir`` (or ``artifacts.directory``) of its JSON document, else
    the path on its human output's ``bundle: …`` line; None when it printed neither."""
    try:
        doc = json.loads(stdout)
    except ValueError:
        lines = [line for line in stdout.splitlines() if line.startswith("bundle: ")]
        return Path(lines[-1].removeprefix("bundle: ").strip()) if lines else None
    found = doc.get("bundleDir") or (doc.get("artifacts") or {}).get("directory") if isinstance(doc, dict) else None
    return Path(found) if found else None


def assert_ran_on(backend: str, stdout: str, stderr: str = "") -> Path:
    """The bundle a CLI command printed, checked to record ``backend`` (``native`` or ``playground``)."""
    bundle = printed_bundle(stdout)
    assert bundle is not None, stdout[-3000:] + stderr[-3000:]
    assert recorded_backend(bundle) == RECORDED[backend], (bundle, backend)
    return bundle
