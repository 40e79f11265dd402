"""Parse a bundle document with its contract model (codebox_tui/contracts/bundle.py): the read side's one
way from sandbox-written bytes to a typed value.

Every byte in a bundle was written by (or next to) a sandbox, so it is hostile input: documents are read as
regular files only, size- and depth-limited (bundle/safe_read.py), then validated by the pydantic model.
Any failure is a :class:`~codebox_tui.errors.BadInputError` that names the file and the field and says what
was expected, never a traceback.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ValidationError

from codebox_tui.bundle.safe_read import parse_json
from codebox_tui.errors import BadInputError

M = TypeVar("M", bound=BaseModel)


def _field(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def validation_problem(error: ValidationError) -> tuple[str, str]:
    """(field, what is wrong) of the first problem pydantic found."""
    first = error.errors()[0]
    return _field(tuple(first.get("loc", ()))), str(first.get("msg", "invalid value"))


def validate_document(model: type[M], data: object, source: str, *, code: str = "malformed-bundle") -> M:
    """``data`` (parsed JSON) as ``model``; ``source`` names the bundle file in the error."""
    try:
        return model.model_validate(data)
    except ValidationError as error:
        field, problem = validation_problem(error)
        where = f"{source}:{field}" if field else source
        more = f" (and {error.error_count() - 1} more problem(s))" if error.error_count() > 1 else ""
        raise BadInputError(f"{where}: {problem}{more}", code=code, field=where) from error


def parse_document(model: type[M], data: bytes, source: str, *, code: str = "malformed-bundle") -> M:
    """Bytes already read (depth-limited JSON) validated as ``model``."""
    return validate_document(model, parse_json(data, source, code=code), source, code=code)
