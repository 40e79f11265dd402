"""The native backend's WordPress on disk (docs/backends.md, "native").

- **Host PHP**: the ``php`` on ``PATH`` (Debian's ``php8.2-cli`` with ``php8.2-sqlite3``); its version is the
  only one a native sandbox runs (:func:`check_native_php`).
- **Prepared install**, made once per WordPress build and cached under ``$CODEBOX_HOME/native``: the SQLite
  Database Integration plugin unpacked from ``@wp-playground/wordpress-builds`` (the same build Playground
  uses), its ``db.php`` drop-in pointing at it, and a template ``wp-content`` holding the build's
  pre-installed SQLite database. Core is the golden site of the Playground backend (runtime/golden.py),
  shared read-only by every sandbox.
- **Per-sandbox folder** (``$CODEBOX_HOME/sandboxes/sandbox-native-…``): ``wp-content/`` (a copy of the
  template, with its own database file), ``tmp/``, and ``config/`` — the generated ``wp-config.php``,
  ``bootstrap.php`` and ``wp-cli.yml``, written by the host and bound read-only into the sandbox.

Sandbox paths are Playground's (``/wordpress``, ``/wordpress/wp-content``, ``/tmp``), so commands, mounts
and bundles look the same on both backends.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from codebox_tui.errors import BadInputError, SandboxError
from codebox_tui.runtime.confinement import PathBind
from codebox_tui.runtime.golden import build_once, copy_tree
from codebox_tui.runtime.native_cgi import ROUTER_NAME, ROUTER_PHP
from codebox_tui.runtime.php_literal import php_string
from codebox_tui.runtime.wordpress_builds import BUILDS_DIR, WordPressBuild

NATIVE_FORMAT = "1"
SQLITE_ZIP = BUILDS_DIR / "src" / "sqlite-database-integration" / "sqlite-database-integration.zip"
# Where things appear inside a native sandbox.
CORE = "/wordpress"
WP_CONTENT = "/wordpress/wp-content"
CONFIG_DIR = "/codebox/config"
SQLITE_DIR = "/codebox/sqlite"
OPCACHE_DIR = "/codebox/opcache"
TMP = "/tmp"
CGI_HINT = "install Debian's PHP CGI (`scripts/install-system.sh`, or `apt-get install php8.2-cgi`)"
SALT_NAMES = (
    "AUTH_KEY",
    "SECURE_AUTH_KEY",
    "LOGGED_IN_KEY",
    "NONCE_KEY",
    "AUTH_SALT",
    "SECURE_AUTH_SALT",
    "LOGGED_IN_SALT",
    "NONCE_SALT",
)
PHP_HINT = (
    "install Debian's PHP CLI and its SQLite extension (`scripts/install-system.sh`, or "
    "`apt-get install php8.2-cli php8.2-sqlite3`), or use --backend playground"
)


@dataclass(frozen=True)
class HostPhp:
    """The host's PHP: its binary (symlinks resolved), full version and ``major.minor``."""

    binary: str
    version: str
    series: str


@cache
def host_php() -> HostPhp:
    """The host PHP a native sandbox runs, with the extensions WordPress on SQLite needs; a SandboxError
    naming what is missing otherwise."""
    found = shutil.which("php")
    if found is None:
        raise SandboxError(
            "the native backend needs PHP on the host and there is no `php` on PATH",
            code="native-php-missing",
            details={"hint": PHP_HINT},
        )
    binary = os.path.realpath(found)
    probe = (
        "echo json_encode(['version' => PHP_VERSION, 'series' => PHP_MAJOR_VERSION . '.' . PHP_MINOR_VERSION,"
        " 'pdo_sqlite' => extension_loaded('pdo_sqlite')]);"
    )
    try:
        done = subprocess.run([binary, "-r", probe], capture_output=True, timeout=30, check=False)
        info = json.loads(done.stdout)
    except (OSError, ValueError, subprocess.TimeoutExpired) as error:
        raise SandboxError(
            f"the host PHP ({binary}) did not report its version: {error}",
            code="native-php-missing",
            details={"hint": PHP_HINT},
        ) from error
    if not info.get("pdo_sqlite"):
        raise SandboxError(
            f"the host PHP ({binary}) has no pdo_sqlite extension (WordPress runs on SQLite)",
            code="native-php-missing",
            details={"hint": PHP_HINT},
        )
    return HostPhp(binary, str(info["version"]), str(info["series"]))


def php_cgi_binary() -> str:
    """The host's ``php-cgi`` of the same PHP as the CLI (page requests, runtime/native_cgi.py); a SandboxError
    naming the package otherwise."""
    series = host_php().series
    for name in (f"php-cgi{series}", "php-cgi"):
        found = shutil.which(name)
        if found:
            return os.path.realpath(found)
    raise SandboxError(
        f"the native backend's page requests need PHP {series}'s CGI and there is no php-cgi on PATH",
        code="native-php-missing",
        details={"hint": CGI_HINT},
    )


def check_native_php(requested: str | None) -> str:
    """The PHP version a native sandbox runs: the host's. Asking for another one is bad input naming the
    Playground backend, which has every supported version."""
    php = host_php()
    if requested is None or requested in (php.series, php.version):
        return php.series
    raise BadInputError(
        f"--php {requested}: the native backend runs the host's PHP {php.series} only; use --backend playground "
        f"for PHP {requested}",
        code="native-php-version",
        field="php",
        details={"hostPhp": php.version},
    )


def check_native_mount_targets(targets: list[str]) -> None:
    """Refuse a mount over the native sandbox's own read-only configuration (``/codebox``, the ``db.php``
    drop-in): it would replace what the sandbox must not change."""
    for index, target in enumerate(targets):
        path = target.rstrip("/")
        if path == "/codebox" or path.startswith("/codebox/") or path == f"{WP_CONTENT}/db.php":
            raise BadInputError(
                f"mounts[{index}]: {target} is the native sandbox's own read-only configuration; mount somewhere else",
                code="invalid-mount",
                field=f"mounts[{index}]",
            )


# -- the prepared install ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class PreparedInstall:
    """One WordPress build's native pieces: the shared core (read-only), the SQLite plugin folder, the
    ``db.php`` drop-in and the template ``wp-content``."""

    core: Path
    sqlite_plugin: Path
    db_dropin: Path
    template: Path


def ensure_prepared_install(build: WordPressBuild, golden_site: Path, native_root: Path) -> PreparedInstall:
    """The prepared install for ``build`` under ``native_root``, made once (atomically, under a lock)."""
    target = native_root / f"wp-{build.version}-v{NATIVE_FORMAT}"
    prepared = PreparedInstall(
        core=golden_site, sqlite_plugin=target / "sqlite", db_dropin=target / "db.php", template=target / "wp-content"
    )

    def fill(staging: Path) -> None:
        _unpack_sqlite_plugin(staging / "sqlite")
        dropin = (staging / "sqlite" / "db.copy").read_text(encoding="utf-8")
        dropin = dropin.replace("{SQLITE_IMPLEMENTATION_FOLDER_PATH}", SQLITE_DIR).replace(
            "{SQLITE_PLUGIN}", "sqlite-database-integration/load.php"
        )
        (staging / "db.php").write_text(dropin, encoding="utf-8")
        copy_tree(golden_site / "wp-content", staging / "wp-content")
        (staging / "wp-content" / "uploads").mkdir(exist_ok=True)

    try:
        build_once(native_root, target, fill, build.version)
    except (OSError, zipfile.BadZipFile) as error:
        raise SandboxError(
            f"could not prepare the native WordPress {build.version} install: {error}", code="native-install-failed"
        ) from error
    return prepared


def _unpack_sqlite_plugin(dest: Path) -> None:
    """The plugin's files (the zip's one top folder stripped), refusing any member that leaves ``dest``."""
    with zipfile.ZipFile(SQLITE_ZIP) as archive:
        for member in archive.infolist():
            parts = member.filename.split("/", 1)
            if len(parts) < 2 or not parts[1] or member.is_dir():
                continue
            relative = Path(parts[1])
            if relative.is_absolute() or ".." in relative.parts:
                raise SandboxError(
                    f"{SQLITE_ZIP.name}: unsafe member {member.filename!r}", code="native-install-failed"
                )
            out = dest / relative
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(archive.read(member))


def ensure_opcache_seed(
    prepared: PreparedInstall, php: HostPhp, make: Callable[[PreparedInstall, Path], None]
) -> Path | None:
    """The opcache file-cache seed for this install and PHP build: made once by ``make`` (a clean sandbox
    loading WordPress into the folder it is given), kept beside the prepared install; each sandbox gets a
    private copy, so no sandbox can write to the seed another one reads. None when PHP has no opcache or
    making the seed failed (sandboxes then run without it)."""
    target = prepared.template.parent / f"opcache-{php.version}"
    if (target / ".complete").is_file():
        return target / "cache"
    with open(prepared.template.parent.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / ".complete").is_file():
            return target / "cache"
        staging = Path(tempfile.mkdtemp(prefix=".opcache-", dir=prepared.template.parent))
        try:
            (staging / "cache").mkdir()
            make(prepared, staging / "cache")
            if not any((staging / "cache").iterdir()):
                return None
            (staging / ".complete").write_text(php.version + "\n", encoding="ascii")
            os.replace(staging, target)
        except (OSError, SandboxError):
            return None
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target / "cache"


# -- one sandbox's configuration ----------------------------------------------------------------------------
def salts(sandbox_id: str, key: bytes) -> dict[str, str]:
    """The sandbox's authentication keys and salts: derived from its id with this home's secret key, so
    they are stable for the sandbox and worthless in any other."""
    return {name: hmac.new(key, f"{name}:{sandbox_id}".encode(), hashlib.sha512).hexdigest() for name in SALT_NAMES}


def salt_key(native_root: Path) -> bytes:
    """This Codebox home's secret for deriving salts (made once, readable by its owner only)."""
    path = native_root / "salt-key"
    try:
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        pass
    native_root.mkdir(parents=True, exist_ok=True)
    fresh = secrets.token_hex(32)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "w", encoding="ascii") as handle:
        handle.write(fresh + "\n")
    return bytes.fromhex(fresh)


def open_basedir(extra_targets: list[str]) -> str:
    """The folders PHP may open: the site (core read-only, wp-content), the temp folder, Codebox's
    read-only configuration and plugin, and the mount targets outside the site."""
    roots = [CORE, TMP, "/codebox"]
    for target in extra_targets:
        if not any(target == root or target.startswith(root.rstrip("/") + "/") for root in roots):
            roots.append(target)
    return ":".join(roots)


def bootstrap_php(
    sandbox_id: str, key: bytes, *, basedir: str, block_external_http: bool, site_url: str = "http://127.0.0.1"
) -> str:
    """``bootstrap.php``: run by ``wp-config.php`` before WordPress; WordPress sees the sandbox as its world.
    ``site_url``: the sandbox's preview (runtime/native_preview.py), WordPress's ``home`` and ``siteurl``."""
    defines = {
        "DB_NAME": "wordpress",
        "DB_USER": "",
        "DB_PASSWORD": "",
        "DB_HOST": "localhost",
        "DB_CHARSET": "utf8",
        "DB_COLLATE": "",
        "DB_DIR": f"{WP_CONTENT}/database/",
        "DB_FILE": ".ht.sqlite",
        "WP_CONTENT_DIR": WP_CONTENT,
        "WP_PLUGIN_DIR": f"{WP_CONTENT}/plugins",
        "WPMU_PLUGIN_DIR": f"{WP_CONTENT}/mu-plugins",
        "WP_TEMP_DIR": f"{TMP}/",
        "UPLOADS": "wp-content/uploads",
        "WP_HOME": site_url,
        "WP_SITEURL": site_url,
        "WP_CONTENT_URL": f"{site_url}/wp-content",
        "FS_METHOD": "direct",
        **salts(sandbox_id, key),
    }
    lines = [
        "<?php",
        f"// Codebox native sandbox {sandbox_id}: generated by the host, read-only inside.",
        f"ini_set('open_basedir', {php_string(basedir)});",
    ]
    lines += [f"define({php_string(name)}, {php_string(value)});" for name, value in defines.items()]
    lines += [
        "define('DISABLE_WP_CRON', true);",
        "define('WP_DEBUG', false);",
        "define('CODEBOX_SANDBOX', " + php_string(sandbox_id) + ");",
    ]
    if block_external_http:
        lines.append("define('WP_HTTP_BLOCK_EXTERNAL', true);")
    return "\n".join(lines) + "\n"


def wp_config_php(table_prefix: str) -> str:
    """``wp-config.php``: the sandbox's bootstrap, its own table prefix (runtime/table_prefix.py), then WordPress."""
    return f"""<?php
// Codebox native sandbox: generated by the host, read-only inside.
require '{CONFIG_DIR}/bootstrap.php';
$table_prefix = {php_string(table_prefix)};
if ( ! defined( 'ABSPATH' ) ) {{
\tdefine( 'ABSPATH', '{CORE}/' );
}}
require_once ABSPATH . 'wp-settings.php';
"""


WP_CLI_YML = f"path: {CORE}\n"
SANDBOX_ID = re.compile(r"^sandbox-native-[0-9a-f]{12}$")


def write_config(
    config_dir: Path,
    sandbox_id: str,
    key: bytes,
    *,
    table_prefix: str,
    basedir: str,
    block_external_http: bool,
    site_url: str = "http://127.0.0.1",
) -> None:
    """The sandbox's ``wp-config.php`` (with its ``table_prefix``), ``bootstrap.php``, ``wp-cli.yml`` and the page
    requests' router (runtime/native_cgi.py), all bound read-only."""
    config_dir.mkdir()
    (config_dir / "bootstrap.php").write_text(
        bootstrap_php(sandbox_id, key, basedir=basedir, block_external_http=block_external_http, site_url=site_url),
        encoding="utf-8",
    )
    (config_dir / "wp-config.php").write_text(wp_config_php(table_prefix), encoding="utf-8")
    (config_dir / "wp-cli.yml").write_text(WP_CLI_YML, encoding="utf-8")
    (config_dir / ROUTER_NAME).write_text(ROUTER_PHP, encoding="utf-8")
    for name in ("bootstrap.php", "wp-config.php", "wp-cli.yml", ROUTER_NAME):
        (config_dir / name).chmod(0o444)


def opcache_copy(seed: Path, dest: Path) -> list[PathBind]:
    """The sandbox's own compiled-script cache: a private copy of the seed, except the entries of read-only
    core (``wp-includes``, ``wp-admin``: most of it), which are bound read-only from the seed instead — core
    never changes, so those entries never need rewriting, and no sandbox can write what another reads."""
    shared: list[PathBind] = []
    core_dirs = {"wp-includes", "wp-admin"}

    def skip_core(folder: str, names: list[str]) -> set[str]:
        if Path(folder).parent.parent != seed:
            return set()
        if Path(folder).name == "codebox":  # the seed sandbox's own configuration, never another's
            return {"config"} & set(names)
        if Path(folder).name != "wordpress":
            return set()
        for name in sorted(core_dirs & set(names)):
            system_id = Path(folder).parent.name
            shared.append(PathBind(f"{folder}/{name}", f"{OPCACHE_DIR}/{system_id}/wordpress/{name}", False))
        return (core_dirs | {"wp-config.php.bin"}) & set(names)

    shutil.copytree(seed, dest, symlinks=True, ignore=skip_core)
    return shared
