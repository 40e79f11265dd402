"""Key remapping: binding ids to keys, e.g. ``{"review.approve_all": "ctrl+a"}``.

The map is the ``keymap`` setting (codebox_tui/settings.py, docs/settings.md): ``CODEBOX_KEYMAP`` as JSON,
else the file ``$CODEBOX_HOME/keymap.json`` read here. The app hands it to Textual's ``App.set_keymap``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path


def load_keymap(path: Path) -> tuple[dict[str, str], str | None]:
    """The keymap and an error message (never raises: a broken file must not stop the app)."""
    if not path.is_file():
        return {}, None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return {}, f"{path}: not valid JSON ({error}); using default keys"
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        return {}, f"{path}: must map binding ids to key strings; using default keys"
    return dict(data), None


def key_for(binding_id: str, default: str, keymap: Mapping[str, str]) -> str:
    """The key a binding answers to under ``keymap``: the first of the keys mapped to its id (a keymap
    value may list several, ``"a,ctrl+a"``), else ``default``."""
    keys = [key.strip() for key in keymap.get(binding_id, "").split(",") if key.strip()]
    return keys[0] if keys else default
