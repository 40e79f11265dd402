"""A batch file: JSON Lines, one item per line — its ``kind``, an optional ``id`` and
``sandbox_session_id``, and the kind's own arguments (docs/scale-out.md, "Batch files").

Blank lines and lines starting with ``#`` are skipped. Every problem names the file, the line and the
field, e.g. ``batch.jsonl line 3, field 'patch': Field required``.
"""

from __future__ import annotations

import json
from pathlib import Path

from codebox_tui.batch.kinds import item_from_json
from codebox_tui.batch.model import BatchItem
from codebox_tui.errors import BadInputError

MAX_ITEMS = 10_000
MAX_LINE_BYTES = 1024 * 1024


def parse_batch_text(
    text: str, *, base_dir: Path, name: str = "batch", default_backend: str | None = None
) -> list[BatchItem]:
    """Every item of a batch file's text; relative paths in items are resolved against ``base_dir``;
    ``default_backend`` (``--backend``) is the backend of every item that names none of its own."""
    items: list[BatchItem] = []
    seen: set[str] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{name} line {number}"
        if len(line.encode("utf-8")) > MAX_LINE_BYTES:
            raise BadInputError(
                f"{where}: longer than {MAX_LINE_BYTES} bytes", code="invalid-batch-item", field=f"line {number}"
            )
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as error:
            raise BadInputError(
                f"{where}: not JSON ({error.msg} at column {error.colno}); expected one JSON object per line",
                code="invalid-batch-item",
                field=f"line {number}",
            ) from None
        if not isinstance(obj, dict):
            raise BadInputError(
                f'{where}: expected a JSON object with a "kind"', code="invalid-batch-item", field=f"line {number}"
            )
        item = item_from_json(
            obj, base_dir=base_dir, where=where, default_id=f"item-{len(items) + 1}", default_backend=default_backend
        )
        item.line = number
        if item.id in seen:
            raise BadInputError(
                f"{where}, field 'id': {item.id!r} is already used by an earlier item",
                code="invalid-batch-item",
                field="id",
            )
        seen.add(item.id)
        items.append(item)
        if len(items) > MAX_ITEMS:
            raise BadInputError(f"{name}: more than {MAX_ITEMS} items", code="invalid-batch-item", field="FILE")
    if not items:
        raise BadInputError(f"{name}: no items (expected one JSON object per line)", code="empty-batch", field="FILE")
    return items


def parse_batch_file(path: Path, *, default_backend: str | None = None) -> list[BatchItem]:
    """A batch file's items (see :func:`parse_batch_text`); a missing or unreadable file is a clear error."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInputError(f"batch file not found: {path}", code="missing-batch-file", field="FILE") from None
    except (OSError, UnicodeDecodeError) as error:
        raise BadInputError(
            f"cannot read the batch file {path}: {error}; expected UTF-8 JSON Lines",
            code="invalid-batch-file",
            field="FILE",
        ) from None
    return parse_batch_text(text, base_dir=path.resolve().parent, name=path.name, default_backend=default_backend)
