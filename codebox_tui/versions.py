"""Default WordPress and PHP versions: the one place these literals live.

The WordPress default is the newest build `@wp-playground/wordpress-builds` ships offline for the
pinned bridge; the PHP default is the newest stable PHP-WASM runtime in the pinned Playground.
"""

from __future__ import annotations

DEFAULT_WP_VERSION = "6.5"
DEFAULT_PHP_VERSION = "8.3"
# the PHP versions Playground runs (PHP-WASM builds in the pinned Playground); native runs the host's
SUPPORTED_PHP = ("7.4", "8.0", "8.1", "8.2", "8.3", "8.4", "8.5")


def same_php(recorded: str, wanted: str) -> bool:
    """Whether PHP ``recorded`` (e.g. a snapshot's ``8.2.29``) is the version ``wanted`` asks for, compared at
    the precision of the less precise one: a series (``8.2``, what a run asks for) matches every release of
    it; two full versions must be equal."""
    recorded_parts, wanted_parts = recorded.split("."), wanted.split(".")
    common = min(len(recorded_parts), len(wanted_parts))
    return common >= 2 and recorded_parts[:common] == wanted_parts[:common]
