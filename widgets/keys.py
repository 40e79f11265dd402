"""Key names as people write them: ``]`` not ``right_square_bracket``, ``ctrl+t`` not ``^t``."""

from __future__ import annotations

from textual.keys import format_key


def key_display(key: str) -> str:
    """``key`` (a Textual key string, e.g. ``ctrl+right_square_bracket``) for Help and hints."""
    *modifiers, name = key.split("+")
    return "+".join([*modifiers, format_key(name)]) if name else key
