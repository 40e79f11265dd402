"""What screens tell the app (one place, dataclass messages): a screen posts one and it bubbles to
``CodeboxApp``, which acts on it. Screens never reach into the app for these."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textual.message import Message


@dataclass
class OpenBundle(Message):
    """Review the bundle at ``path`` (verified in a worker first, screens/opening.py), on ``tab`` when given
    (e.g. ``tab-tests``)."""

    path: Path
    tab: str | None = None
