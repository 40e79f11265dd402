"""Which runtime backend boots a run's sandbox (docs/backends.md): ``playground`` (WordPress Playground,
PHP compiled to WebAssembly, the default) or ``native`` (the host's PHP, each process in bubblewrap).
``--backend`` on the command line, else the ``backend`` setting (``CODEBOX_BACKEND``)."""

from __future__ import annotations

from codebox_tui.errors import BadInputError
from codebox_tui.runtime.backend import Backend
from codebox_tui.runtime.native import NativeBackend
from codebox_tui.runtime.native_site import check_native_mount_targets, check_native_php, host_php
from codebox_tui.settings import CodeboxSettings, get_settings
from codebox_tui.versions import DEFAULT_PHP_VERSION, SUPPORTED_PHP

BACKEND_NAMES = ("playground", "native")


def backend_name(requested: str | None, settings: CodeboxSettings | None = None) -> str:
    """``requested`` (``--backend``) checked, or the ``backend`` setting when it is None."""
    name = requested if requested is not None else (settings or get_settings()).backend
    if name not in BACKEND_NAMES:
        raise BadInputError(
            f"--backend {name!r} is not a backend; choose one of {', '.join(BACKEND_NAMES)}",
            code="unknown-backend",
            field="backend",
        )
    return name


# A recipe's ``runtime.backend`` (the wire name) as a backend name; "wordpress" names none in particular.
WIRE_BACKENDS = {"wordpress-playground": "playground", "native": "native"}
BACKEND_WIRE_NAMES = {"playground": "wordpress-playground", "native": "native"}


def chosen_backend(requested: str | None, wire: str | None, settings: CodeboxSettings | None = None) -> str:
    """The backend a run of a file (a recipe, a batch item) gets: ``--backend`` when given, else the file's
    own ``runtime.backend`` (its wire name), else the ``backend`` setting (``CODEBOX_BACKEND``)."""
    if requested is not None:
        return backend_name(requested, settings)
    return backend_name(WIRE_BACKENDS.get(wire or ""), settings)


def make_backend(name: str, settings: CodeboxSettings | None = None) -> Backend:
    if name == "native":
        return NativeBackend(settings)
    # the Playground backend, its Node sidecar and their thread pools load when a Playground sandbox is made: a
    # native run never imports them (tests/unit/test_cli_lazy.py; docs/performance.md, "Eighteenth session")
    from codebox_tui.runtime.playground import PlaygroundBackend  # noqa: PLC0415 - loaded on demand, see above

    return PlaygroundBackend(settings)


def default_php(name: str) -> str:
    """The PHP version a run gets when it names none: the host's on ``native``, else Codebox's default."""
    if name == "native":
        return host_php().series
    return DEFAULT_PHP_VERSION


def check_php(name: str, php: str) -> None:
    """Refuse, before anything boots, a PHP version ``name`` cannot run (the message names the way out)."""
    if name == "native":
        check_native_php(php)
        return
    if php not in SUPPORTED_PHP:
        raise BadInputError(
            f"--php {php} is not available; choose one of {', '.join(SUPPORTED_PHP)}",
            code="unknown-php-version",
            field="--php",
        )


def check_mount_targets(name: str, targets: list[str]) -> None:
    """Refuse, before anything boots, a mount target the backend keeps for itself."""
    if name == "native":
        check_native_mount_targets(targets)


def check_features(name: str, *, preview_bind: str | None = None) -> None:
    """Refuse, before anything boots, what ``name`` cannot do: on native, a preview listening anywhere but
    ``127.0.0.1`` (its relay binds loopback only, docs/backends.md, "The preview"). Holding a live preview
    (``codebox boot``, ``--hold``) works on both. The message names the way out."""
    if name == "native" and preview_bind is not None and preview_bind != "127.0.0.1":
        raise BadInputError(
            f"--preview-bind {preview_bind}: the native backend's preview listens on 127.0.0.1 "
            "only; drop --preview-bind or use --backend playground",
            code="native-preview-bind",
            field="preview-bind",
        )
