"""``apply-audit.jsonl``: one ``wp-codebox/apply-audit/v1`` line per apply attempt, success or failure.

Values under keys that name a patch body or a secret are replaced with ``"[redacted]"`` (the
reference's rule, docs/contracts.md "Apply audit"); nulls are dropped. Lines are appended under an
exclusive ``flock`` and fsynced, so concurrent appliers never interleave partial lines.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

from codebox_tui.contracts.apply import APPLY_AUDIT_SCHEMA
from codebox_tui.contracts.common import utc_now_iso

REDACTED = "[redacted]"
BODY_KEYS = frozenset({"patch", "patch_body", "patch_diff", "diff", "body", "content", "contents"})
SECRET_MARKERS = ("secret", "token", "password", "credential", "authorization", "private_key", "api_key")


def redact(value: Any) -> Any:
    """Drop nulls; replace patch bodies and secret-named values, at any depth."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if item is None:
                continue
            lowered = str(key).lower()
            if lowered in BODY_KEYS or any(marker in lowered for marker in SECRET_MARKERS):
                out[key] = REDACTED
            else:
                out[key] = redact(item)
        return out
    if isinstance(value, list | tuple):
        return [redact(item) for item in value if item is not None]
    return value


def append_apply_audit(path: Path, entry: dict[str, Any]) -> dict[str, Any]:
    """Append one redacted audit line; returns what was written."""
    record = redact({"schema": APPLY_AUDIT_SCHEMA, "timestamp": utc_now_iso(), **entry})
    line = (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    return dict(record)


def read_audit(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
