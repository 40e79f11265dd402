"""Typed settings (environment variables prefixed ``CODEBOX_``)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from platformdirs import user_data_dir
from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PACKAGE_DIR = Path(__file__).resolve().parent
NODE_BRIDGE_DIR = PACKAGE_DIR / "runtime" / "node"


class CodeboxSettings(BaseSettings):
    """Where Codebox keeps its state and which external tools it uses."""

    model_config = SettingsConfigDict(env_prefix="CODEBOX_", extra="ignore")

    home: Path = Field(default_factory=lambda: Path(user_data_dir("codebox", appauthor=False)))
    # Where every command writes run bundles unless told otherwise (--artifacts, a recipe's
    # artifacts.directory): one root, so the review inbox finds them all.
    artifacts_root: Path | None = None
    wp_cli_phar: Path | None = None
    node: str = "node"
    chromium: str = "/usr/bin/chromium"
    default_wp: str = "6.5"
    default_php: str = "8.3"
    boot_timeout_s: float = 120.0
    command_timeout_s: float = 120.0
    # Keep one pre-booted spare sandbox (~200 MB, one background boot) so the next run starts in
    # well under a second. "auto": on in long-lived processes (the TUI, or once a process boots a
    # second sandbox), off for one-shot `codebox run`.
    spare_sandboxes: Literal["auto", "on", "off"] = "auto"
    # Tab stops in the diff views (WordPress code is tab-indented): CODEBOX_TAB_WIDTH.
    tab_width: int = Field(default=4, ge=1, le=16)
    # Per-command output cap, for stdout and stderr each (head and a short tail are kept; the cut is
    # recorded in the command result, the events and the bundle). docs/security-secrets.md.
    max_command_output_bytes: int = Field(default=10 * 1024 * 1024, ge=1024)
    # OS-level confinement of the Node sidecar (docs/security.md, "Layers"): "bwrap" (bubblewrap;
    # booting fails with a clear error when it is missing or unusable) or "none" — DANGEROUS: sandboxed
    # PHP is then held only by Playground's own virtual file system.
    confinement: Literal["bwrap", "none"] = "bwrap"
    # Address the live preview listens on. Loopback only by default; anything else exposes the
    # sandbox's WordPress to the network (`--preview-bind` on `codebox boot` / `codebox run`).
    preview_bind: str = "127.0.0.1"

    @field_validator("preview_bind")
    @classmethod
    def _preview_bind_is_an_ip_address(cls, value: str) -> str:
        import ipaddress

        try:
            return str(ipaddress.ip_address(value.strip("[]")))
        except ValueError:
            raise ValueError(f"CODEBOX_PREVIEW_BIND must be an IP address such as 127.0.0.1, not {value!r}") from None

    @property
    def playground_home(self) -> Path:
        """``$HOME`` handed to Playground: its download cache is seeded here, so it never fetches."""
        return self.home / "playground-home"

    @property
    def golden_dir(self) -> Path:
        return self.home / "golden"

    @property
    def artifacts_dir(self) -> Path:
        """The default artifacts root: ``CODEBOX_ARTIFACTS_ROOT`` or ``CODEBOX_HOME/artifacts``."""
        return self.artifacts_root or self.home / "artifacts"

    @property
    def db_path(self) -> Path:
        return self.home / "codebox.sqlite3"

    @property
    def keymap_path(self) -> Path:
        return self.home / "keymap.json"


@lru_cache(maxsize=1)
def get_settings() -> CodeboxSettings:
    return CodeboxSettings()


def reload_settings() -> CodeboxSettings:
    get_settings.cache_clear()
    return get_settings()
