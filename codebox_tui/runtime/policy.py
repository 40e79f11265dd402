"""Runtime policy enforcement: the command allow-list, and redaction of secret values."""

from __future__ import annotations

import os

from pydantic import ValidationError

from codebox_tui.bundle.redact import MIN_SECRET_LENGTH, SECRET_MARK, Redactor, check_secret_values
from codebox_tui.bundle.safe_read import MAX_JSON_BYTES, loads_limited, read_regular
from codebox_tui.contracts.runtime import RuntimePolicy
from codebox_tui.errors import BadInputError, PolicyDeniedError
from codebox_tui.runtime.catalog import get_command

__all__ = [
    "MIN_SECRET_LENGTH",
    "SECRET_MARK",
    "Redactor",
    "check_command",
    "check_secret_values",
    "default_policy",
    "load_policy",
    "resolve_secrets",
]


def default_policy(command: str | None = None) -> RuntimePolicy:
    commands = ["inspect-mounted-inputs", "wordpress.run-php"]
    if command and command not in commands:
        commands.append(command)
    return RuntimePolicy(commands=commands)


def load_policy(text: str) -> RuntimePolicy:
    """``--policy`` takes inline JSON or a path to a JSON file."""
    source = "--policy"
    raw = text
    if not text.lstrip().startswith("{"):
        path = os.path.expanduser(text)
        if not os.path.isfile(path):
            raise BadInputError(f"Policy file {text!r} does not exist", code="invalid-policy", field="policy")
        source = path
        try:  # a regular file only (never blocks on a FIFO): bundle/safe_read.py
            raw = read_regular(path, MAX_JSON_BYTES).decode("utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise BadInputError(
                f"Policy file {text!r} cannot be read: {error}", code="invalid-policy", field="policy"
            ) from error
    try:
        data = loads_limited(raw)  # depth-limited: a clear error instead of a RecursionError traceback
    except ValueError as error:
        raise BadInputError(
            f"Policy in {source} is not valid JSON: {error}", code="invalid-policy", field="policy"
        ) from error
    try:
        return RuntimePolicy.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise BadInputError(
            f"Policy field {where or '(root)'}: {first['msg']}",
            code="invalid-policy",
            field=f"policy.{where}",
            details={"errors": [{"loc": list(e["loc"]), "msg": e["msg"]} for e in error.errors()]},
        ) from error


def check_command(policy: RuntimePolicy, command: str) -> None:
    """Raise :class:`PolicyDeniedError` unless ``command`` is allowed (checked before execution)."""
    spec = get_command(command)
    if command not in policy.commands:
        raise PolicyDeniedError(
            f"Command is not allowed by runtime policy: {command}",
            code="runtime-command-disallowed",
            field="policy.commands",
            details={"allowedCommands": list(policy.commands)},
        )
    for required in spec.requiresPolicyCommands:
        if required not in policy.commands:
            raise PolicyDeniedError(
                f"Command {command} also needs {required} in the runtime policy",
                code="runtime-command-disallowed",
                field="policy.commands",
                details={"allowedCommands": list(policy.commands)},
            )


def resolve_secrets(policy: RuntimePolicy, environ: dict[str, str] | None = None) -> dict[str, str]:
    """Values of the allow-listed secret names, read from the parent environment (missing names skipped).

    A value shorter than ``MIN_SECRET_LENGTH`` is refused (BadInputError naming the secret, never its
    value): it could not be redacted without destroying unrelated output."""
    env = os.environ if environ is None else environ
    values = {name: env[name] for name in policy.secret_names if env.get(name)}
    check_secret_values(values)
    return values
