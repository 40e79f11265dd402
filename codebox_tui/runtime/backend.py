"""What a sandbox backend provides. The Playground backend is the real one; the protocol keeps the
session and command handlers independent of how PHP is hosted."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from codebox_tui.contracts.runtime import MountSpec, RuntimePolicy

ProgressCallback = Callable[[str, dict[str, Any]], None]


@dataclass
class SandboxSpec:
    """Everything needed to boot one sandbox."""

    mounts: list[MountSpec]
    policy: RuntimePolicy
    wp: str = "6.5"
    php: str = "8.3"
    blueprint: dict[str, Any] | None = None
    preview_port: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    boot_timeout_s: float = 120.0
    secret_env: dict[str, str] = field(default_factory=dict)
    extra_mounts: list[MountSpec] = field(default_factory=list)  # tool mounts (wp-cli.phar, phpunit), read-only


@dataclass
class PhpResult:
    text: str
    exit_code: int
    errors: str = ""


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

    def run_php(self, code: str, timeout_s: float) -> PhpResult: ...

    def run_cli(self, argv: list[str], timeout_s: float) -> PhpResult: ...

    def request(self, path: str, timeout_s: float, method: str = "GET") -> HttpResult: ...

    def write_file(self, path: str, data: bytes, timeout_s: float = 30.0) -> None: ...

    def read_file(self, path: str, timeout_s: float = 30.0) -> str: ...

    def dispose(self) -> None: ...


class Backend(Protocol):
    name: str

    def boot(self, spec: SandboxSpec, on_progress: ProgressCallback | None = None) -> Sandbox: ...
