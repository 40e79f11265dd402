"""What a sandbox backend provides. The Playground backend is the real one; the protocol keeps the
session and command handlers independent of how PHP is hosted."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from codebox_tui.contracts.runtime import MountSpec, RuntimePolicy
from codebox_tui.errors import BadInputError
from codebox_tui.runtime.mounts import PrivateCopy
from codebox_tui.runtime.sandbox_ids import SandboxId
from codebox_tui.settings import get_settings
from codebox_tui.versions import DEFAULT_PHP_VERSION, DEFAULT_WP_VERSION

ProgressCallback = Callable[[str, dict[str, Any]], None]
ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")


def validate_runtime_env(env: object, field_name: str = "env") -> dict[str, str]:
    """Check runtime environment variables (a recipe's ``inputs.runtimeEnv``, docs/contracts.md "Workspace
    recipe"): NAME → string value."""
    if not isinstance(env, dict):
        raise BadInputError(
            f"{field_name} must be an object of NAME: value strings", code="invalid-runtime-env", field=field_name
        )
    for name, value in env.items():
        if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
            raise BadInputError(
                f"{field_name}: environment variable name {name!r} must match ^[A-Z_][A-Z0-9_]*$",
                code="invalid-runtime-env",
                field=f"{field_name}.{name}",
            )
        if not isinstance(value, str):
            raise BadInputError(
                f"{field_name}.{name} must be a string, not {type(value).__name__}",
                code="invalid-runtime-env",
                field=f"{field_name}.{name}",
            )
    return dict(env)


def _default_boot_timeout() -> float:
    return get_settings().boot_timeout_s


@dataclass
class SandboxSpec:
    """Everything needed to boot one sandbox."""

    mounts: list[MountSpec]
    policy: RuntimePolicy
    wp: str = DEFAULT_WP_VERSION
    php: str = DEFAULT_PHP_VERSION
    blueprint: dict[str, Any] | None = None
    preview_port: int | None = None
    # Address the preview server listens on; None: the ``preview_bind`` setting (127.0.0.1).
    preview_bind: str | None = None
    # The address a browser reaches the preview by (a tunnel's public URL): WordPress's WP_HOME/WP_SITEURL name it
    # instead of the local preview address (`--preview-public-url`, docs/sites.md "Held previews").
    site_url: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    # Seconds; default: the ``boot_timeout_s`` setting (CODEBOX_BOOT_TIMEOUT_S).
    boot_timeout_s: float = field(default_factory=_default_boot_timeout)
    secret_env: dict[str, str] = field(default_factory=dict)
    extra_mounts: list[MountSpec] = field(default_factory=list)  # tool mounts (wp-cli.phar, phpunit), read-only
    # Plain (non-secret) environment for PHP's getenv()/$_ENV: recipe ``inputs.runtimeEnv``, `--env`.
    # Recorded in the bundle's runtime metadata with its values; never redacted.
    env: dict[str, str] = field(default_factory=dict)
    # Load WordPress once during boot. Runs skip it (their first command pays that load instead);
    # a held live preview (`codebox boot`) wants its first page fast.
    warm: bool = False
    # Private copies of copy-on-write mounts (index into ``mounts``), made by the session before boot;
    # the backend mounts each in place of its host folder (runtime/mounts.py, PrivateCopy).
    private_copies: dict[int, PrivateCopy] = field(default_factory=dict)
    # As root, with a ``:live`` mount: the host uid the session handed the live folders to before boot, which the
    # sandbox must run as (runtime/sandbox_ids.py; the session holds it: taken with the backend's ``host_id_for``
    # where it has one, the uid of the Playground sidecar that will serve it). None: the backend takes one itself.
    host_id: SandboxId | None = None

    def __post_init__(self) -> None:
        self.env = validate_runtime_env(self.env)


@dataclass
class PhpResult:
    text: str
    exit_code: int
    errors: str = ""
    # {"stdout"|"stderr": {totalBytes, keptBytes, omittedBytes, limitBytes}} when the output cap cut it
    truncated: dict[str, Any] | None = None


@dataclass
class HttpResult:
    status: int
    headers: dict[str, Any]
    text: str


class Sandbox(Protocol):
    id: str
    preview_url: str
    wordpress_version: str
    php_version: str
    # the site's table prefix, as its wp-config.php sets it (runtime/table_prefix.py): what the host's readers
    # of the database follow
    table_prefix: str

    def run_php(self, code: str, timeout_s: float) -> PhpResult: ...

    def probe_php(self, code: str, timeout_s: float) -> PhpResult:
        """Run Codebox's own measuring code: no file the sandbox planted (``auto_prepend_file``, preload,
        ``php.ini``, the opcache file cache) runs in this request (docs/security.md)."""
        ...

    def run_cli(
        self,
        argv: list[str],
        timeout_s: float,
        env: dict[str, str] | None = None,
        on_stderr: Callable[[str], None] | None = None,
    ) -> PhpResult:
        """A PHP command line in the sandbox. ``on_stderr`` is handed its standard error as it is written (text
        in chunks of any size, the sandbox's: a display hint, never evidence); the result holds all of it."""
        ...

    def request(self, path: str, timeout_s: float, method: str = "GET") -> HttpResult: ...

    def write_file(self, path: str, data: bytes, timeout_s: float = 30.0) -> None: ...

    def read_file(self, path: str, timeout_s: float = 30.0, *, max_bytes: int) -> bytes:
        """The bytes of a file in the sandbox; a SandboxError ``file-too-large`` when it is over ``max_bytes``
        (never more than that crosses to the host)."""
        ...

    def abort(self, reason: str) -> None:
        """Stop at once (the reviewer cancelled): a running request fails now with ``reason``; ``dispose``
        still follows."""
        ...

    def dispose(self) -> None: ...


class Backend(Protocol):
    name: str

    def boot(self, spec: SandboxSpec, on_progress: ProgressCallback | None = None) -> Sandbox: ...
