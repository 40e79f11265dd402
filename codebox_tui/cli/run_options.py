"""The options ``run``, ``boot`` and ``episode run`` share (their help texts) and the run request ``run`` and
``boot`` build from them. A shared module, not an area: each of those commands' areas imports it, and it
imports nothing an area alone needs (no blueprints, episodes or held-preview machinery)."""

from __future__ import annotations

from pathlib import Path

from codebox_tui.durations import parse_duration
from codebox_tui.lifecycle import (
    RunRequest,
    mounts_from_text,
    policy_from_text,
    preview_bind_address,
    settle_runtime,
)
from codebox_tui.runtime.backends import backend_name
from codebox_tui.runtime.wordpress_builds import wp_option_help

WP_HELP = wp_option_help()  # the builds shipped offline, read from the installed package

MOUNT_HELP = (
    "HOST:SANDBOX[:readonly|readwrite|live] (repeatable; readwrite works on a private copy, "
    "live writes through to HOST)."
)
RESTORE_HELP = (
    "A snapshot document (files/runtime-snapshots/<id>.json of a bundle) to restore into the fresh sandbox "
    "before the command; its WordPress and PHP versions must be the run's."
)
PREVIEW_BIND_HELP = (
    "Address the live preview listens on (default 127.0.0.1, loopback only). Another address, "
    "e.g. 0.0.0.0, exposes the sandbox's WordPress to the network."
)


def run_request(
    mounts: list[str],
    policy_text: str | None,
    wp: str,
    php: str | None,
    boot_timeout: str,
    artifacts: Path | None,
    *,
    preview_bind: str | None = None,
    backend: str | None = None,
) -> RunRequest:
    """The fields ``run`` and ``boot`` share, parsed the way the Launch screen parses them. No ``--php``: the
    backend's default (the host's PHP on native), filled in by ``settle_runtime`` as for every flow."""
    return settle_runtime(
        RunRequest(
            mounts=mounts_from_text(mounts),
            policy=policy_from_text(policy_text),
            wp=wp,
            php=php,
            backend=backend_name(backend),
            boot_timeout_s=parse_duration(boot_timeout, "--boot-timeout"),
            artifacts_root=artifacts,
            preview_bind=preview_bind_address(preview_bind),
        )
    )
