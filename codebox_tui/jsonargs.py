"""JSON arguments and source paths, the way every entry point reads them.

A JSON argument is inline JSON or ``@path``; a relative path is resolved against a base directory (the
recipe's directory for ``recipe validate``/``recipe-run``, the working directory for a direct command), so
the recipe checks, the policy derivation and the browser steps all read the same file. ``json_path`` names
a place in a JSON document (``$.workflow.steps[0]``) for error messages.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from codebox_tui.bundle.safe_read import MAX_JSON_BYTES, JsonTooDeepError, loads_limited, read_regular
from codebox_tui.errors import BadInputError


def json_path(parts: Iterable[Any]) -> str:
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def resolve_source(base_dir: Path, source: str) -> Path:
    p = Path(source).expanduser()
    return p if p.is_absolute() else (base_dir / p)


def json_arg_file(value: str, base_dir: Path) -> Path | None:
    """The file an ``@path`` JSON argument names, resolved against the recipe's directory (None if inline)."""
    return resolve_source(base_dir, value[1:]).resolve() if value.startswith("@") else None


def load_json_arg(value: str, base_dir: Path, where: str) -> Any:
    """Parse a JSON argument (inline or ``@path`` relative to the recipe); errors name ``where``.

    The one resolver for ``recipe validate``, ``recipe-run`` and the policy derivation, so all of them read
    the same file.
    """
    file = json_arg_file(value, base_dir)
    text = value
    if file is not None:
        if not file.is_file():
            raise BadInputError(f"{where}: JSON file does not exist: {file}", code="missing-source", field=where)
        try:
            text = read_regular(file, MAX_JSON_BYTES).decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInputError(
                f"{where}: JSON file cannot be read: {exc}", code="invalid-source", field=where
            ) from exc
    try:
        return loads_limited(text)
    except JsonTooDeepError as exc:
        what = f"file {file}" if file is not None else "value"
        raise BadInputError(f"{where}: the {what} {exc}", code="invalid-arg", field=where) from exc
    except json.JSONDecodeError as exc:
        what = f"file {file}" if file is not None else "value"
        raise BadInputError(
            f"{where}: expected JSON, the {what} has {exc.msg} at line {exc.lineno} column {exc.colno}",
            code="invalid-arg",
            field=where,
        ) from exc
