"""What a caller asks of one run (:class:`RunRequest`), how it is steered while it runs
(:class:`RunControl`), and the checks that fail bad input before anything boots.

Every caller of the run lifecycle (``codebox run``/``boot``, the Launch and Live run screens,
``recipe-run``, ``evaluate-patch``) builds a :class:`RunRequest`; the text parsers here turn what a
person typed (``HOST:SANDBOX[:mode]`` mounts, policy JSON, ``NAME=VALUE`` pairs) into its fields,
so the CLI and the TUI read the same input the same way (docs/architecture.md, "Runtime API").
"""

from __future__ import annotations

import ipaddress
import json
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from codebox_tui.browser.checkpoints import parse_checkpoints
from codebox_tui.contracts.runtime import MountSpec, RuntimePolicy
from codebox_tui.errors import BadInputError
from codebox_tui.runtime.backend import validate_runtime_env
from codebox_tui.runtime.backends import backend_name, check_features, check_mount_targets, check_php, default_php
from codebox_tui.runtime.bench_args import PATH_SEPARATOR, bench_settings
from codebox_tui.runtime.catalog import get_command, parse_args
from codebox_tui.runtime.core_checkout import COMMAND as CORE_PHPUNIT
from codebox_tui.runtime.core_checkout import check_core_step
from codebox_tui.runtime.mounts import parse_mount, validate_mounts
from codebox_tui.runtime.policy import default_policy, load_policy
from codebox_tui.runtime.wordpress_builds import resolve_build
from codebox_tui.versions import DEFAULT_WP_VERSION, same_php


@dataclass
class CommandStep:
    """One catalog command with its ``key=value`` arguments and its own timeout (None: the
    ``command_timeout_s`` setting)."""

    command: str
    args: list[str] = field(default_factory=list)
    timeout_s: float | None = None


@dataclass
class Toolchain:
    """Host tools a run may mount read-only (see ``lifecycle/tools.py``); None: the settings' or the
    machine's default (``CODEBOX_WP_CLI_PHAR``, ``$WP_TESTS_DIR``, vendor folders)."""

    wp_cli_phar: Path | None = None
    wp_tests_lib: Path | None = None
    phpunit_polyfills: Path | None = None


@dataclass
class RunRequest:
    """Everything one run needs: the sandbox (mounts, policy, versions, environment), the commands
    to run in it, how long to hold its preview afterwards and where its bundle goes.

    ``mounts`` are parsed and validated (:func:`mounts_from_text`, or a caller's own ``MountSpec``s);
    ``extra_mounts`` are a caller's own read-only mounts besides the tools (a recipe's extra
    plugins). ``policy`` None means the default policy for the first command. ``tool_commands``
    names the commands to provide tools for; None means the commands requested, or — for a caller
    that runs its commands step by step — every command the policy allows."""

    mounts: list[MountSpec] = field(default_factory=list)
    commands: list[CommandStep] = field(default_factory=list)
    policy: RuntimePolicy | None = None
    wp: str = DEFAULT_WP_VERSION
    # None: the backend's own default (runtime/backends.py, default_php: the host's PHP on native)
    php: str | None = None
    # "playground" or "native" (runtime/backends.py); None: the ``backend`` setting (CODEBOX_BACKEND)
    backend: str | None = None
    blueprint: dict[str, Any] | None = None
    env: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    boot_timeout_s: float | None = None
    preview_port: int | None = None
    preview_bind: str | None = None
    # a tunnel's public URL for the held preview: WordPress's WP_HOME/WP_SITEURL name it (public_url_from_text)
    public_url: str | None = None
    hold_s: float | None = None
    warm: bool = False
    artifacts_root: Path | None = None
    extra_mounts: list[MountSpec] = field(default_factory=list)
    tools: Toolchain = field(default_factory=Toolchain)
    tool_commands: list[str] | None = None
    capture: bool = True  # False only for a preview that leaves no bundle (`codebox boot`)
    # A runtime snapshot (contracts.site_state.RuntimeSnapshot, its bytes inline) restored into the sandbox right
    # after boot, before anything else (`codebox run --restore`; docs/episodes.md), and where it was read from.
    restore: Any = None
    restore_source: str | None = None
    flow: str = "run"  # recorded with the run in the store: run, recipe-run, evaluate-patch, tui, …

    def effective_policy(self) -> RuntimePolicy:
        if self.policy is not None:
            return self.policy
        return default_policy(self.commands[0].command if self.commands else None)

    def command_args(self) -> list[tuple[str, dict[str, str]]]:
        """Each requested command with its parsed arguments (a step's own host inputs, such as a core checkout)."""
        return [(step.command, parse_args(get_command(step.command), step.args)) for step in self.commands]

    def wanted_tools(self) -> list[str]:
        """The commands whose tools this run mounts (see the class docstring)."""
        if self.tool_commands is not None:
            return list(self.tool_commands)
        if self.commands:
            return [step.command for step in self.commands]
        return list(self.effective_policy().commands)


class RunControl:
    """Steers a run from another thread: :meth:`cancel` stops it (no further step starts and the
    sandbox is killed, so a running command fails at once; the evidence so far is still captured),
    :meth:`release` ends a hold early. The service checks it between steps."""

    def __init__(self) -> None:
        self._cancelled = threading.Event()
        self._released = threading.Event()
        self._lock = threading.Lock()
        self._on_cancel: list[Callable[[str], None]] = []
        self.reason = ""

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    @property
    def released(self) -> bool:
        return self._released.is_set()

    def cancel(self, reason: str = "was cancelled") -> None:
        with self._lock:
            if self._cancelled.is_set():
                return
            self.reason = reason
            self._cancelled.set()
            self._released.set()
            callbacks = list(self._on_cancel)
        for callback in callbacks:
            callback(reason)

    def release(self) -> None:
        self._released.set()

    def wait_released(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for :meth:`release` (or :meth:`cancel`); True when it came."""
        return self._released.wait(timeout_s)

    def on_cancel(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """Call ``callback(reason)`` on cancel (at once when already cancelled); returns an undo."""
        with self._lock:
            already = self._cancelled.is_set()
            if not already:
                self._on_cancel.append(callback)
        if already:
            callback(self.reason)

        def undo() -> None:
            with self._lock:
                if callback in self._on_cancel:
                    self._on_cancel.remove(callback)

        return undo


# -- text a person typed → request fields (the CLI and the Launch screen share these) -------------------


def mounts_from_text(texts: list[str]) -> list[MountSpec]:
    """``HOST:SANDBOX[:readonly|readwrite|live]`` each → validated mounts; a sandbox path mounted twice
    is refused."""
    return validate_mounts([parse_mount(text, index) for index, text in enumerate(texts)])


def policy_from_text(text: str | None) -> RuntimePolicy | None:
    """Inline policy JSON or a JSON file; empty: None (the default policy for the command)."""
    return load_policy(text) if text and text.strip() else None


def preview_bind_address(address: str | None) -> str | None:
    """``--preview-bind``: an IP address; None keeps the ``preview_bind`` setting (loopback)."""
    if address is None:
        return None
    try:
        return str(ipaddress.ip_address(address.strip("[]")))
    except ValueError:
        raise BadInputError(
            f"--preview-bind {address!r} must be an IP address, e.g. 127.0.0.1 or 0.0.0.0",
            code="invalid-preview-bind",
            field="preview-bind",
        ) from None


def public_url_from_text(text: str | None) -> str | None:
    """``--preview-public-url``: an absolute http(s) URL with a host and no query or fragment (a tunnel's address
    for the held preview, docs/sites.md "Held previews"); the trailing slash is dropped, as WordPress keeps it."""
    if text is None:
        return None
    parsed = urllib.parse.urlsplit(text.strip())
    if (
        parsed.scheme not in ("http", "https")
        or not parsed.hostname
        or parsed.query
        or parsed.fragment
        or parsed.username
        or parsed.password
        or any(ch.isspace() for ch in text.strip())
    ):
        raise BadInputError(
            f"--preview-public-url {text!r} must be an http:// or https:// URL with a host and no "
            "query, fragment or credentials, e.g. https://my-tunnel.example",
            code="invalid-public-url",
            field="preview-public-url",
        )
    return urllib.parse.urlunsplit((parsed.scheme, parsed.netloc, parsed.path.rstrip("/"), "", ""))


def env_from_pairs(items: list[str], field_name: str = "env") -> dict[str, str]:
    """``NAME=VALUE`` each → the runtime environment (validated: names, sizes)."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise BadInputError(
                f"--{field_name} {item!r} must look like NAME=VALUE", code="invalid-runtime-env", field=field_name
            )
        out[name] = value
    return validate_runtime_env(out, field_name)


def json_object_from_text(
    text: str, option: str, code: str, *, field: str | None = None, example: str = ""
) -> dict[str, Any]:
    """An option whose value is one JSON object (``--metadata``, ``--orchestrator``), or a BadInputError naming
    the option."""
    try:
        value = json.loads(text)
    except ValueError as error:
        raise BadInputError(f"{option} must be a JSON object: {error}", code=code, field=field or option) from None
    if not isinstance(value, dict):
        raise BadInputError(f"{option} must be a JSON object{example}", code=code, field=field or option)
    return value


def metadata_from_json(text: str | None) -> dict[str, Any]:
    """``--metadata``: a JSON object (opaque caller metadata recorded with the run)."""
    return json_object_from_text(text, "--metadata", "invalid-metadata", field="metadata") if text else {}


def settle_runtime(request: RunRequest) -> RunRequest:
    """``request`` with its backend chosen (``--backend``, else ``CODEBOX_BACKEND``) and its PHP version
    filled in: the one asked for, else the backend's default (the host's PHP on native)."""
    backend = backend_name(request.backend)
    php = request.php if request.php is not None else default_php(backend)
    if backend == request.backend and php == request.php:
        return request
    return replace(request, backend=backend, php=php)


def check_request(request: RunRequest) -> None:
    """What can be known wrong before anything boots (or a golden site is built): the backend, the PHP
    version it can run, the WordPress version, each command's arguments (a ``code-file`` that is missing or
    not a regular file) and the preview port."""
    request = settle_runtime(request)
    backend = backend_name(request.backend)
    assert request.php is not None  # settled
    check_php(backend, request.php)
    check_mount_targets(backend, [mount.target for mount in [*request.mounts, *request.extra_mounts]])
    check_features(backend, preview_bind=request.preview_bind)
    if request.preview_port is not None and not (1 <= request.preview_port <= 65535):
        raise BadInputError("--preview-port must be between 1 and 65535", code="invalid-port", field="preview-port")
    if request.public_url is not None and not request.hold_s:
        raise BadInputError(
            "--preview-public-url names the address of a held preview: give --preview-hold too",
            code="public-url-without-hold",
            field="preview-public-url",
        )
    for step in request.commands:
        args = parse_args(get_command(step.command), step.args)
        if "code" in args and "code-file" in args:
            raise BadInputError("Give code= or code-file=, not both", code="invalid-arg", field="code-file")
        if step.command == "wordpress.bench":
            bench_settings(args)  # paths and caps (docs/bench.md)
        if step.command == CORE_PHPUNIT:
            check_core_step(args, polyfills=request.tools.phpunit_polyfills)  # the checkout and its polyfills
        if step.command == "wordpress.browser-probe" and args.get("checkpoint"):
            parse_checkpoints(args["checkpoint"].split(PATH_SEPARATOR))  # docs/browser.md, "Named checkpoints"
        if "code-file" in args:
            path = Path(args["code-file"]).expanduser()
            if not path.is_file():
                raise BadInputError(
                    f"code-file {args['code-file']!r} does not exist or is not a regular file",
                    code="missing-code-file",
                    field="code-file",
                )
    build = resolve_build(request.wp)  # unknown versions fail before anything boots
    if request.restore is not None:
        check_restore_versions(request.restore, build.version, request.php)


def check_restore_versions(snapshot: Any, wordpress_version: str, php: str) -> None:
    """Refuse, before anything boots, a snapshot taken on another WordPress build or PHP version (restoring it
    would corrupt the site); ``restore_snapshot`` checks the booted sandbox again (docs/episodes.md). A
    natively taken snapshot records the host's full PHP version (``8.2.29``): a run asking for its series
    (``8.2``) matches it."""
    have = snapshot.compatibility
    for what, flag, theirs, ours, same in (
        ("WordPress", "--wp", have.wordpressVersion, wordpress_version, have.wordpressVersion == wordpress_version),
        ("PHP", "--php", have.phpVersion, php, same_php(have.phpVersion, php)),
    ):
        if not same:
            raise BadInputError(
                f"snapshot {snapshot.id} was taken on {what} {theirs}, this run asks for {what} {ours}; run it "
                f"with {flag} {theirs}",
                code="snapshot-incompatible",
                field=f"compatibility.{'wordpressVersion' if what == 'WordPress' else 'phpVersion'}",
            )
