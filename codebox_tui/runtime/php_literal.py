"""A host string as a PHP single-quoted literal: the one quoting rule for values Codebox writes into PHP code."""

from __future__ import annotations


def php_string(value: str) -> str:
    """``value`` as a PHP single-quoted string literal (backslashes and quotes escaped)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
