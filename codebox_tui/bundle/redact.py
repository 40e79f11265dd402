"""Redaction of configured secret values from everything Codebox writes (streams, logs, bundles)."""

from __future__ import annotations

import json
import re

SECRET_MARK = "[REDACTED:configured-secret-value]"


class Redactor:
    """Replaces every configured secret value (and its JSON-escaped form) in text."""

    def __init__(self, values: list[str]) -> None:
        forms: set[str] = set()
        for value in values:
            if len(value) < 4:
                continue  # too short to redact without destroying unrelated text
            forms.add(value)
            forms.add(json.dumps(value)[1:-1])
        ordered = sorted(forms, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(v) for v in ordered)) if ordered else None

    def __call__(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(SECRET_MARK, text)

    @property
    def active(self) -> bool:
        return self._pattern is not None
