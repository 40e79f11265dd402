"""Default WordPress and PHP versions: the one place these literals live.

The WordPress default is the newest build `@wp-playground/wordpress-builds` ships offline for the
pinned bridge; the PHP default is the newest stable PHP-WASM runtime in the pinned Playground.
"""

from __future__ import annotations

DEFAULT_WP_VERSION = "6.5"
DEFAULT_PHP_VERSION = "8.3"
