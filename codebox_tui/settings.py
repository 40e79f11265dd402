"""Typed settings: every environment variable Codebox reads as configuration is a field here.

Variables are prefixed ``CODEBOX_`` (``tab_width`` ← ``CODEBOX_TAB_WIDTH``; the name in any case), except the
two names the WordPress test tooling already uses (``WP_TESTS_DIR``, ``WP_TESTS_PHPUNIT_POLYFILLS_PATH``). A
structured value (``CODEBOX_KEYMAP``) is JSON. Each one is documented in docs/settings.md. A bad value is a
:class:`~codebox_tui.errors.BadInputError` naming the variable, never a traceback.

The environment is read here, into a plain pydantic model, rather than through pydantic-settings: that package
imports asyncio, argparse, dotenv and its cloud secret sources (about a tenth of a second), and every ``codebox``
command reads its settings.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, get_origin

from platformdirs import user_data_dir
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from codebox_tui.errors import BadInputError
from codebox_tui.keymap import load_keymap

PACKAGE_DIR = Path(__file__).resolve().parent
NODE_BRIDGE_DIR = PACKAGE_DIR / "runtime" / "node"


HEADLESS_SHELL = Path("/usr/bin/chromium-headless-shell")
FULL_CHROMIUM = "/usr/bin/chromium"


def default_chromium() -> str:
    """Debian's Chromium headless shell where it is installed, else its full Chromium. Codebox only ever runs the
    browser headless, and the shell is the same engine without the desktop browser around it: a launch costs about
    half the CPU (docs/browser.md, "Which Chromium")."""
    return str(HEADLESS_SHELL) if HEADLESS_SHELL.is_file() else FULL_CHROMIUM


BYTE_SUFFIXES = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def parse_byte_size(text: str, variable: str) -> int:
    """``"512M"`` → bytes: a whole number with an optional K, M or G suffix (1024-based; ``KiB``/``KB`` too)."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?)(?:I?B)?\s*", text.upper())
    if match is None:
        raise ValueError(
            f"{variable} must be a number of bytes with an optional K, M or G suffix (e.g. 1G or 512M), not {text!r}"
        )
    return int(match.group(1)) * BYTE_SUFFIXES[match.group(2)]


ENV_PREFIX = "CODEBOX_"


class CodeboxSettings(BaseModel):
    """Where Codebox keeps its state and which external tools it uses: the environment's values
    (:func:`environment_values`), then the keyword arguments given, which win."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, validate_default=True)

    def __init__(self, **values: Any) -> None:
        super().__init__(**{**environment_values(), **values})

    home: Path = Field(default_factory=lambda: Path(user_data_dir("codebox", appauthor=False)))
    # Where every command writes run bundles unless told otherwise (--artifacts, a recipe's
    # artifacts.directory): one root, so the review inbox finds them all.
    artifacts_root: Path | None = None
    wp_cli_phar: Path | None = None
    node: str = "node"
    # The Chromium that browser probes and actions launch (Debian's; Playwright downloads nothing).
    chromium: str = Field(default_factory=default_chromium)
    # Defaults for a sandbox boot and for one command when the caller names no timeout (seconds).
    boot_timeout_s: float = Field(default=120.0, gt=0)
    command_timeout_s: float = Field(default=120.0, gt=0)
    # Keep one pre-booted spare sandbox (~200 MB, one background boot) so the next run starts in
    # well under a second. "auto": on in long-lived processes (the TUI, or once a process boots a
    # second sandbox), off for one-shot `codebox run`.
    spare_sandboxes: Literal["auto", "on", "off"] = "auto"
    # How V8 compiles PHP's WebAssembly in the sidecar (docs/performance.md, "WebAssembly compiler"):
    # "baseline" (Liftoff only: no optimizing recompilation of hot functions, about 10 % less CPU per
    # run, PHP loops ~9 % slower) or "tiered" (V8's default: Liftoff first, hot functions then TurboFan,
    # for long CPU-bound PHP). CODEBOX_WASM_COMPILER.
    wasm_compiler: Literal["baseline", "tiered"] = "baseline"
    # Tab stops in the diff views (WordPress code is tab-indented): CODEBOX_TAB_WIDTH.
    tab_width: int = Field(default=4, ge=1, le=16)
    # Per-command output cap, for stdout and stderr each (head and a short tail are kept; the cut is
    # recorded in the command result, the events and the bundle). docs/security-secrets.md.
    max_command_output_bytes: int = Field(default=10 * 1024 * 1024, ge=1024)
    # Summarize the site's database after boot and before capture of every run, for the bundle's
    # files/site-state-diff.json (docs/site-state.md, "In every run"): CODEBOX_SITE_STATE=off skips it.
    site_state: Literal["on", "off"] = "on"
    # OS-level confinement of the Node sidecar (docs/security.md, "Layers"): "bwrap" (bubblewrap;
    # booting fails with a clear error when it is missing or unusable) or "none" — DANGEROUS: sandboxed
    # PHP is then held only by Playground's own virtual file system.
    confinement: Literal["bwrap", "none"] = "bwrap"
    # The runtime backend a run boots when it names none (docs/backends.md): "playground" (PHP compiled to
    # WebAssembly in Node) or "native" (the host's PHP, every process in its own bubblewrap). CODEBOX_BACKEND.
    backend: Literal["playground", "native"] = "playground"
    # Address the live preview listens on. Loopback only by default; anything else exposes the
    # sandbox's WordPress to the network (`--preview-bind` on `codebox boot` / `codebox run`).
    preview_bind: str = "127.0.0.1"
    # Screenshots in the Review screen's evidence: "auto" (the terminal's graphics protocol when it
    # answers, coloured half-blocks otherwise), "halfcell" (always half-blocks), "off" (paths only).
    images: Literal["auto", "halfcell", "off"] = "auto"
    # Who `codebox review approve|discard|iterate` records when --approver is not given (default: the
    # current user).
    approver: str | None = None
    # Recipes may name http(s) sources for extra plugins/themes only when this is true (README, "Recipes").
    allow_network_downloads: bool = False
    # The WordPress core PHPUnit library and the Yoast polyfills for `phpunit` runs, under the names the
    # WordPress tooling uses (--wp-tests-lib / --phpunit-polyfills win over these).
    wp_tests_dir: Path | None = Field(default=None, validation_alias=AliasChoices("WP_TESTS_DIR"))
    wp_tests_phpunit_polyfills_path: Path | None = Field(
        default=None, validation_alias=AliasChoices("WP_TESTS_PHPUNIT_POLYFILLS_PATH")
    )
    # Key remapping for the TUI: binding ids to keys, e.g. {"review.approve_all": "ctrl+a"}, applied with
    # Textual's App.set_keymap. CODEBOX_KEYMAP (JSON) when set, else the file $CODEBOX_HOME/keymap.json.
    keymap: dict[str, str] = Field(default_factory=dict)
    # Record every captured run in this machine's review inbox. Batch workers run with it off: the batch's
    # caller receives each bundle, verifies it and records it there (docs/scale-out.md).
    record_runs: bool = True
    # What one batch item declares to Ray (docs/scale-out.md, "Resources"): CPUs and memory, so a worker
    # never runs more sandboxes at once than it can hold.
    batch_item_cpus: float = Field(default=1.0, gt=0, le=64)
    batch_item_memory_mb: int = Field(default=1536, ge=64)
    # How many bytes one sandbox's PHP may add to host files (docs/settings.md, docs/security.md "What a
    # sandbox may write"): a number of bytes with an optional K/M/G suffix (1024-based), 0 for no limit.
    # Past it, writes fail in PHP with "Disk quota exceeded" and the run is flagged write-budget-exceeded.
    sandbox_write_budget: int = Field(default=1024**3, ge=0)
    _keymap_problem: str | None = PrivateAttr(default=None)

    @field_validator("images", mode="before")
    @classmethod
    def _images_synonyms(cls, value: object) -> object:
        if isinstance(value, str):
            text = value.strip().lower()
            return "off" if text in ("0", "off", "no", "false", "paths") else text
        return value

    @field_validator("sandbox_write_budget", mode="before")
    @classmethod
    def _byte_size(cls, value: object) -> object:
        return parse_byte_size(value, "CODEBOX_SANDBOX_WRITE_BUDGET") if isinstance(value, str) else value

    @field_validator("wp_tests_dir", "wp_tests_phpunit_polyfills_path", "approver", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="after")
    def _keymap_from_file(self) -> CodeboxSettings:
        if "keymap" not in self.model_fields_set:
            self.keymap, self._keymap_problem = load_keymap(self.keymap_path)
        return self

    @property
    def keymap_problem(self) -> str | None:
        """Why the keymap file was ignored (shown once as a warning), or None."""
        return self._keymap_problem

    @field_validator("preview_bind")
    @classmethod
    def _preview_bind_is_an_ip_address(cls, value: str) -> str:
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


def variable_name(field_name: str) -> str:
    """The environment variable that sets a field: its own name when it has one (``WP_TESTS_DIR``), else
    ``CODEBOX_`` and the field's name in capitals. A name that is not a field is returned as it is (pydantic
    reports a field under its alias, already the variable's name)."""
    field = CodeboxSettings.model_fields.get(field_name)
    if field is None:
        return field_name
    alias = field.validation_alias
    return str(alias.choices[0]) if isinstance(alias, AliasChoices) else ENV_PREFIX + field_name.upper()


def environment_values() -> dict[str, Any]:
    """The fields the environment sets, by field name: each field's variable (:func:`variable_name`, matched in
    any case), its text as it is, a structured field's (``CODEBOX_KEYMAP``) decoded from JSON. A structured value
    that is not JSON raises a BadInputError naming its variable."""
    fields_by_variable = {variable_name(name).lower(): name for name in CodeboxSettings.model_fields}
    values: dict[str, Any] = {}
    for variable, text in os.environ.items():
        name = fields_by_variable.get(variable.lower())
        if name is None:
            continue
        if get_origin(CodeboxSettings.model_fields[name].annotation) in (dict, list):
            try:
                values[name] = json.loads(text)
            except ValueError:
                raise BadInputError(
                    f'invalid setting: {variable_name(name)} must be JSON, e.g. {{"review.approve_all": "ctrl+a"}}',
                    code="invalid-setting",
                    field=variable_name(name),
                ) from None
        else:
            values[name] = text
    return values


@lru_cache(maxsize=1)
def get_settings() -> CodeboxSettings:
    """The settings from the environment; a bad value raises a BadInputError naming its variable."""
    try:
        return CodeboxSettings()
    except ValidationError as error:
        problems = [(variable_name(str(item["loc"][0]) if item["loc"] else ""), item["msg"]) for item in error.errors()]
        variable = problems[0][0] if problems else "CODEBOX_*"
        raise BadInputError(
            "invalid setting: " + "; ".join(f"{v}: {m}" for v, m in problems), code="invalid-setting", field=variable
        ) from None


def reload_settings() -> CodeboxSettings:
    get_settings.cache_clear()
    return get_settings()


def ensure_artifacts_dir(path: Path) -> Path:
    """Create the folder that receives run bundles (``--artifacts``), or say clearly why it cannot be used."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise BadInputError(
            f"cannot use {path} for run bundles: {error.strerror or error}; expected a writable folder",
            code="artifacts-dir-unusable",
            field="--artifacts",
        ) from error
    return path
