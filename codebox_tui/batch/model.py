"""A batch item and the checks every kind shares (docs/scale-out.md, "Batch files"); the file itself is read
by ``batch/batchfile.py``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from codebox_tui.errors import BadInputError

ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
COMMON_FIELDS = ("kind", "id", "sandbox_session_id")


class ItemArgs(BaseModel):
    """The base of every kind's arguments: unknown fields are errors, never ignored."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


@dataclass
class BatchItem:
    """One parsed item: ``request`` is what its kind made of the line (see ``batch/kinds.py``), ready to
    ship to a worker; ``label`` is a short human title (plugin + patch, recipe name)."""

    id: str
    kind: str
    request: Any
    label: str
    line: int = 0
    sandbox_session_id: str | None = None
    source: dict[str, Any] = field(default_factory=dict)  # the line's own JSON (recorded with the batch)


def validation_message(error: ValidationError, where: str) -> BadInputError:
    """The first problem of a pydantic error as one line naming ``where`` and the field."""
    first = error.errors()[0]
    name = ".".join(str(p) for p in first["loc"]) or "?"
    return BadInputError(f"{where}, field {name!r}: {first['msg']}", code="invalid-batch-item", field=name)


def check_common(obj: dict[str, Any], where: str, default_id: str) -> tuple[str, str | None]:
    """The item's ``id`` (or ``default_id``) and ``sandbox_session_id``, checked."""
    item_id = obj.get("id", default_id)
    if not isinstance(item_id, str) or not ID_RE.match(item_id):
        raise BadInputError(
            f"{where}, field 'id': expected 1-64 letters, digits, '.', '_' or '-' (got {item_id!r})",
            code="invalid-batch-item",
            field="id",
        )
    session = obj.get("sandbox_session_id")
    if session is not None and (not isinstance(session, str) or not session or len(session) > 200):
        raise BadInputError(
            f"{where}, field 'sandbox_session_id': expected a non-empty string of at most 200 characters",
            code="invalid-batch-item",
            field="sandbox_session_id",
        )
    return item_id, session
