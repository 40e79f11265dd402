"""The WordPress core PHPUnit library (``WP_UnitTestCase``) and the Yoast PHPUnit Polyfills for plugin suites.

Plugins test with ``WP_UnitTestCase``: their ``tests/bootstrap.php`` (the shape ``wp scaffold plugin-tests``
generates) reads ``WP_TESTS_DIR``, loads ``includes/functions.php`` of the core test library, requires the
plugin on ``muplugins_loaded`` and then ``includes/bootstrap.php``, which installs a fresh test site and
loads WordPress. Codebox finds the library and the polyfills where maintainers have them (README,
"Recipes, tests and browser evidence", wordpress.phpunit):

* the WordPress test library: ``--wp-tests-lib DIR``, the ``WP_TESTS_DIR`` environment variable, the
  plugin's Composer ``vendor/wp-phpunit/wp-phpunit``, then ``/tmp/wordpress-tests-lib``;
* the polyfills: ``--phpunit-polyfills DIR``, ``WP_TESTS_PHPUNIT_POLYFILLS_PATH``, then the plugin's
  ``vendor/yoast/phpunit-polyfills``.

Host folders are mounted read-only (:func:`toolchain_mounts`); folders inside the plugin's ``vendor/`` come
with the plugin. Inside the sandbox the variables point at the mounted paths, so a scaffolded bootstrap
works unchanged. The test site uses SQLite with the table prefix ``wptests_``
(:data:`TESTS_CONFIG_PHP`) in a database file of its own (:data:`TESTS_DB_FILE`); the library's installer
is run by Codebox as a separate PHP request before PHPUnit (``WP_TESTS_SKIP_INSTALL=1``), never as a child
process of the sandbox's PHP.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from codebox_tui.contracts.runtime import MountSpec
from codebox_tui.errors import BadInputError, CodeboxError, ExitCode
from codebox_tui.settings import get_settings


class ToolchainMissingError(CodeboxError):
    """A tool a command needs (PHPUnit, the core test library, the polyfills) is not on this machine."""

    exit_code = ExitCode.SANDBOX_FAILURE


LIB_TARGET = "/codebox-wp-tests-lib"
POLYFILLS_TARGET = "/codebox-phpunit-polyfills"
DEFAULT_LIB = Path("/tmp/wordpress-tests-lib")
VENDOR_LIB = "vendor/wp-phpunit/wp-phpunit"
VENDOR_POLYFILLS = "vendor/yoast/phpunit-polyfills"
LIB_FILES = ("includes/functions.php", "includes/bootstrap.php", "includes/install.php")
POLYFILLS_FILE = "phpunitpolyfills-autoload.php"
TESTS_CONFIG = "wp-tests-config.php"
TESTS_PRELUDE = "wp-tests-prelude.php"
TABLE_PREFIX = "wptests_"
# The test site's own SQLite file beside the site's (wp-content/database/): installing or resetting it never
# touches the site under review, and a copy of it can be put back before each suite (runtime/phpunit.py).
TESTS_DB_FILE = ".ht.wptests.sqlite"
TESTS_DB_PATH = f"/wordpress/wp-content/database/{TESTS_DB_FILE}"
# A bootstrap that loads the core test library (scaffolded, wp-phpunit or hand-written) names one of these.
LIB_BOOTSTRAP = re.compile(
    r"WP_TESTS_DIR|WP_PHPUNIT__DIR|wordpress-tests-lib|wp-phpunit|includes/bootstrap\.php"
    r"|includes/functions\.php|WP_UnitTestCase"
)

# The library's wp-tests-config.php: ABSPATH is the sandbox's WordPress; the DB constants are required by
# the library but unused, since Playground's SQLite integration provides $wpdb (in the test site's own
# database file, TESTS_DB_FILE, which the prelude below names).
TESTS_CONFIG_PHP = f"""<?php
// Codebox: wp-tests-config.php for the WordPress core test library inside the sandbox.
define( 'ABSPATH', '/wordpress/' );
define( 'WP_DEFAULT_THEME', 'default' );
define( 'WP_DEBUG', true );
define( 'DB_NAME', 'wordpress_test' );
define( 'DB_USER', 'root' );
define( 'DB_PASSWORD', '' );
define( 'DB_HOST', 'localhost' );
define( 'DB_CHARSET', 'utf8' );
define( 'DB_COLLATE', '' );
$table_prefix = getenv( 'WP_PHPUNIT__TABLE_PREFIX' ) ? getenv( 'WP_PHPUNIT__TABLE_PREFIX' ) : '{TABLE_PREFIX}';
define( 'WP_TESTS_DOMAIN', 'example.org' );
define( 'WP_TESTS_EMAIL', 'admin@example.org' );
define( 'WP_TESTS_TITLE', 'Test Blog' );
define( 'WP_PHP_BINARY', 'php' );
define( 'WPLANG', '' );
// Older scaffolded bootstraps (and many hand-written ones) never forward the polyfills' path to the library,
// which then stops with "The PHPUnit Polyfills library is a requirement": the library reads this file
// before it looks for them, so the path Codebox found is defined here when the bootstrap did not.
if ( ! defined( 'WP_TESTS_PHPUNIT_POLYFILLS_PATH' ) && false !== getenv( 'WP_TESTS_PHPUNIT_POLYFILLS_PATH' ) ) {{
	define( 'WP_TESTS_PHPUNIT_POLYFILLS_PATH', getenv( 'WP_TESTS_PHPUNIT_POLYFILLS_PATH' ) );
}}
"""


def tests_prelude_php(config_path: str) -> str:
    """``auto_prepend_file`` for the installer and PHPUnit: Playground's environment (its constants and
    preloads, which bring the SQLite integration) without the preview's ``WP_HOME``/``WP_SITEURL`` (the
    test site is ``http://example.org``), and the library's config path."""
    return f"""<?php
// Codebox: environment of the WordPress core test library inside the sandbox.
if ( ! defined( 'DB_FILE' ) ) {{
	define( 'DB_FILE', '{TESTS_DB_FILE}' ); // the test site's own database file, not the site's
}}
if ( is_file( '/internal/shared/consts.json' ) ) {{
	$codebox_consts = json_decode( file_get_contents( '/internal/shared/consts.json' ), true );
	foreach ( is_array( $codebox_consts ) ? $codebox_consts : array() as $codebox_name => $codebox_value ) {{
		if ( 'WP_HOME' !== $codebox_name && 'WP_SITEURL' !== $codebox_name && ! defined( $codebox_name )
			&& is_scalar( $codebox_value ) ) {{
			define( $codebox_name, $codebox_value );
		}}
	}}
	unset( $codebox_consts, $codebox_name, $codebox_value );
}}
foreach ( glob( '/internal/shared/preload/*.php' ) as $codebox_preload ) {{
	require_once $codebox_preload;
}}
unset( $codebox_preload );
if ( ! defined( 'WP_TESTS_CONFIG_FILE_PATH' ) ) {{
	define( 'WP_TESTS_CONFIG_FILE_PATH', '{config_path}' );
}}
"""


@dataclass(frozen=True)
class Found:
    """Where a toolchain part was found on the host (``origin``: option, env or default-path)."""

    path: Path
    origin: str


def _valid_lib(path: Path) -> bool:
    return all((path / name).is_file() for name in LIB_FILES)


def _valid_polyfills(path: Path) -> bool:
    return (path / POLYFILLS_FILE).is_file()


def find_host_lib(option: Path | None) -> Found | None:
    """The test library given by ``--wp-tests-lib`` or ``WP_TESTS_DIR`` (the ``wp_tests_dir`` setting),
    else ``/tmp/wordpress-tests-lib``. A folder that was named explicitly but is not the library is an
    error naming what is missing."""
    from_env = get_settings().wp_tests_dir
    for origin, field, value in (("option", "--wp-tests-lib", option), ("env", "WP_TESTS_DIR", from_env)):
        if value is None:
            continue
        path = value.expanduser().resolve()
        if not _valid_lib(path):
            missing = [str(path / name) for name in LIB_FILES if not (path / name).is_file()]
            raise BadInputError(
                f"{field} {value} is not the WordPress core PHPUnit library: missing " + ", ".join(missing),
                code="wp-tests-lib-missing",
                field=field,
                details={
                    "missing": missing,
                    "expected": "a folder with includes/functions.php, includes/bootstrap.php and includes/install.php",
                },
            )
        return Found(path, origin)
    return Found(DEFAULT_LIB, "default-path") if _valid_lib(DEFAULT_LIB) else None


def find_host_polyfills(option: Path | None) -> Found | None:
    """The polyfills given by ``--phpunit-polyfills`` or ``WP_TESTS_PHPUNIT_POLYFILLS_PATH`` (the
    ``wp_tests_phpunit_polyfills_path`` setting)."""
    from_env = get_settings().wp_tests_phpunit_polyfills_path
    for origin, field, value in (
        ("option", "--phpunit-polyfills", option),
        ("env", "WP_TESTS_PHPUNIT_POLYFILLS_PATH", from_env),
    ):
        if value is None:
            continue
        path = value.expanduser().resolve()
        if not _valid_polyfills(path):
            raise BadInputError(
                f"{field} {value} is not the Yoast PHPUnit Polyfills: missing {path / POLYFILLS_FILE}",
                code="phpunit-polyfills-missing",
                field=field,
                details={"missing": [str(path / POLYFILLS_FILE)]},
            )
        return Found(path, origin)
    return None


def toolchain_mounts(wp_tests_lib: Path | None = None, phpunit_polyfills: Path | None = None) -> list[MountSpec]:
    """Read-only mounts of the host's test library and polyfills, each tagged with where it came from."""
    mounts = []
    lib = find_host_lib(wp_tests_lib)
    if lib is not None:
        mounts.append(
            MountSpec(
                source=str(lib.path),
                target=LIB_TARGET,
                mode="readonly",
                captureArtifacts=False,
                metadata={"toolchain": "wp-tests-lib", "origin": lib.origin, "hostPath": str(lib.path)},
            )
        )
    polyfills = find_host_polyfills(phpunit_polyfills)
    if polyfills is not None:
        mounts.append(
            MountSpec(
                source=str(polyfills.path),
                target=POLYFILLS_TARGET,
                mode="readonly",
                captureArtifacts=False,
                metadata={
                    "toolchain": "phpunit-polyfills",
                    "origin": polyfills.origin,
                    "hostPath": str(polyfills.path),
                },
            )
        )
    return mounts


def needs_core_library(bootstrap_source: str) -> bool:
    """Whether a PHPUnit bootstrap (or a test file) loads the WordPress core test library."""
    return bool(LIB_BOOTSTRAP.search(bootstrap_source))
