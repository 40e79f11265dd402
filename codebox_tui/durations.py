"""The one duration parser: ``90``, ``90s``, ``15m``, ``2h``, ``500ms`` → seconds.

A bare number always means seconds, everywhere (CLI options, recipe steps, browser step timeouts).
"""

from __future__ import annotations

import re

from codebox_tui.errors import BadInputError

_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*")
_SCALE = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(text: str, field: str) -> float:
    """Seconds for ``text``; a :class:`BadInputError` naming ``field`` when it is not a duration."""
    match = _DURATION.fullmatch(text)
    if not match:
        raise BadInputError(
            f"{field} {text!r} must look like 30s, 15m, 2h or 500ms", code="invalid-duration", field=field
        )
    return float(match.group(1)) * _SCALE[match.group(2)]
