"""Output helpers shared by the CLI modules: one JSON document on stdout with ``--json``,
human text otherwise, progress on stderr, and one clear line for every user error."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import typer
from pydantic import BaseModel

from codebox_tui.errors import CodeboxError, ExitCode
from codebox_tui.textsafe import json_text, safe_text, terminal_text

CLI_FAILURE_SCHEMA = "wp-codebox/cli-failure/v1"


def to_jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return value


def emit_json(value: Any) -> None:
    # the same value, with DEL, C1 and bidi characters inside strings written as \\u escapes (textsafe.json_text)
    sys.stdout.write(json_text(json.dumps(to_jsonable(value), indent=2, ensure_ascii=False)) + "\n")
    sys.stdout.flush()


def say(line: str, *, err: bool = False) -> None:
    """One line of human output that carries bundle- or sandbox-written text (file names, summaries, risk
    flags, paths): control and bidi characters are printed as escapes (codebox_tui/textsafe.py), so a hostile
    name cannot recolour, clear or reorder the maintainer's terminal."""
    typer.echo(safe_text(line), err=err)


def show(text: str, *, err: bool = False, nl: bool = True) -> None:
    """Human output that may span lines and carry sandbox-written text (a command's stdout, a test's failure
    message, a probe's problem): tabs and newlines are kept, every other control or bidi character is printed
    as an escape (``textsafe.terminal_text``). Every human line of the CLI goes through ``say``, ``show`` or
    ``progress`` (tests/unit/test_cli_output.py holds the CLI modules to that); ``--json`` is the exact form."""
    typer.echo(terminal_text(text), err=err, nl=nl)


def progress(message: str) -> None:
    """A human progress line on stderr (never on stdout, which ``--json`` keeps clean); escaped as ``show``."""
    sys.stderr.write(terminal_text(message) + "\n")
    sys.stderr.flush()


def fail(error: CodeboxError, *, json_mode: bool, command: str = "") -> NoReturn:
    if json_mode:
        emit_json(
            {
                "schema": CLI_FAILURE_SCHEMA,
                "success": False,
                "status": "error",
                "command": command,
                "error": error.to_dict(),
                "exitCode": int(error.exit_code),
            }
        )
    else:
        show(f"codebox: error: {error}", err=True)
        hint = error.details.get("hint") if error.details else None
        if hint:
            show(f"  hint: {hint}", err=True)
    raise typer.Exit(int(error.exit_code))


JsonOption = typer.Option(False, "--json", help="Print one JSON document on stdout.")


def exit_with(code: ExitCode | int) -> NoReturn:
    raise typer.Exit(int(code))


def counted(count: int, noun: str) -> str:
    """``1 problem``, ``2 problems``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


# --backend on every command that boots a sandbox (docs/backends.md)
BACKEND_HELP = (
    "Runtime backend: playground (PHP compiled to WebAssembly; every PHP version, live preview) or "
    "native (the host's PHP in bubblewrap; much faster). Default: CODEBOX_BACKEND, else playground."
)
