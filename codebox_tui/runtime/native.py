"""The native backend: real host PHP, each process inside its own bubblewrap (docs/backends.md).

A sandbox is a folder (runtime/native_site.py): its own ``wp-content`` with its own SQLite database, a
temp folder, and a read-only generated configuration; WordPress core is shared read-only. Nothing but the
page-request worker runs between commands: every command, WP-CLI call and file transfer is one confined process
(runtime/confinement.py, :func:`~codebox_tui.runtime.confinement.php_bwrap_argv`) that sees the sandbox at
Playground's paths and dies with its namespace. Page requests go to the sandbox's one persistent, equally
confined ``php-cgi`` worker (runtime/native_worker.py, runtime/native_cgi.py), started at the first one, and
the preview a browser loads is a relay on the host's loopback that makes one such request per incoming
request (runtime/native_preview.py). Every process of a sandbox counts against its process budget, and its
own data and its changes to its copy-on-write mounts sit in one size-limited file system
(runtime/native_limits.py).
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Callable
from functools import cache, partial
from pathlib import Path
from typing import Any

from codebox_tui.contracts.runtime import RuntimePolicy
from codebox_tui.errors import BadInputError, SandboxError
from codebox_tui.runtime.backend import HttpResult, PhpResult, ProgressCallback, SandboxSpec
from codebox_tui.runtime.confinement import (
    PathBind,
    drops_to_sandbox_uid,
    find_bwrap,
    in_system_view,
    php_bwrap_argv,
    readonly_dir,
)
from codebox_tui.runtime.golden import copy_tree, ensure_golden_site
from codebox_tui.runtime.live_mirror import LiveMirror, MirrorThread, take_in_live_mounts
from codebox_tui.runtime.mounts import remove_tree
from codebox_tui.runtime.native_cgi import (
    MAX_BODY_BYTES,
    MAX_HEADER_BYTES,
    MAX_REQUEST_BODY_BYTES,
    CgiRequest,
    CgiResponse,
    cgi_environment,
    check_request,
    parse_cgi_response,
)
from codebox_tui.runtime.native_limits import DiskBudget, ProcessCap, footprint
from codebox_tui.runtime.native_output import CappedReader, feed_stdin
from codebox_tui.runtime.native_preview import PreviewRelay
from codebox_tui.runtime.native_shell import run_shell
from codebox_tui.runtime.native_site import (
    CONFIG_DIR,
    CORE,
    OPCACHE_DIR,
    SQLITE_DIR,
    TMP,
    WP_CONTENT,
    PreparedInstall,
    check_native_mount_targets,
    check_native_php,
    ensure_opcache_seed,
    ensure_prepared_install,
    host_php,
    opcache_copy,
    open_basedir,
    php_cgi_binary,
    salt_key,
    write_config,
)
from codebox_tui.runtime.native_worker import CHILDREN, MAX_REQUESTS, PhpWorker, kill_group, wait_for_exit
from codebox_tui.runtime.reaper import OWNER_FILE
from codebox_tui.runtime.sandbox_dirs import abandoned_sandbox_dirs, sandbox_mounts, sweep_abandoned_once
from codebox_tui.runtime.sandbox_ids import SandboxId, allocate, host_uid
from codebox_tui.runtime.sandbox_owner import hand_over_folders, reclaim
from codebox_tui.runtime.table_prefix import (
    DEFAULT_TABLE_PREFIX,
    PrefixRename,
    rename_database_prefix,
    table_prefix_for,
)
from codebox_tui.runtime.wordpress_builds import resolve_build
from codebox_tui.settings import CodeboxSettings, get_settings

NAME = "native"
# The sandbox's own writable data (wp-content, tmp, the compiled-script cache) inside its folder: one
# size-limited file system (runtime/native_limits.py).
DATA = "data"
# The environment of every confined PHP process (nothing of the caller's).
# WP_CLI_CONFIG_PATH: the sandbox's read-only wp-cli.yml scopes every `wp` call (core is read-only, so
# the file cannot sit beside it).
BASE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": TMP,
    "TMPDIR": TMP,
    "LANG": "C.UTF-8",
    "WP_CLI_CONFIG_PATH": f"{CONFIG_DIR}/wp-cli.yml",
}
PHP_MEMORY_LIMIT = "512M"
# Processes (and threads) a sandbox's uid may have on the host while a PHP process of it forks: a fork bomb
# stops there. Only when Codebox runs as root: then the sandbox runs as a uid of its own on the host
# (runtime/sandbox_ids.py), where the limit is enforced and counts that sandbox's processes only; as a normal
# user it would count the caller's own processes.
MAX_SANDBOX_PROCESSES = 256
# The sandbox's compiled-script cache: a file cache only (each command is a new process), in its own copy
# of the seed a clean sandbox made (native_site.ensure_opcache_seed), timestamps checked.
OPCACHE_ON = [
    "opcache.enable_cli=1",
    "opcache.enable=1",
    f"opcache.file_cache={OPCACHE_DIR}",
    "opcache.file_cache_only=1",
    "opcache.validate_timestamps=1",
]
OPCACHE_OFF = ["opcache.enable_cli=0", "opcache.enable=0"]
# The page-request worker lives across requests: compiled scripts stay in its own shared memory (its
# processes only), the file cache behind it; every file's timestamp is checked at every request, so code a
# command changed runs at the next page.
OPCACHE_WORKER = [
    "opcache.enable=1",
    f"opcache.file_cache={OPCACHE_DIR}",
    "opcache.file_cache_only=0",
    "opcache.validate_timestamps=1",
    "opcache.revalidate_freq=0",
    "opcache.memory_consumption=64",
]
# What runs the sandbox's own code, with its compiled-script cache (never Codebox's probes or transfers).
OWN_CODE = ("run", "cli")
# The PHP a command line may name (runtime/commands.py builds ``["php", …]`` for WP-CLI and PHPUnit).
PHP_NAMES = ("php", "/usr/bin/php", "/usr/local/bin/php")
# What the seed sandbox compiles: WordPress and the admin includes plugin probes load.
SEED_CODE = (
    "<?php require '/wordpress/wp-load.php'; require_once ABSPATH . 'wp-admin/includes/plugin.php';"
    " require_once ABSPATH . 'wp-admin/includes/admin.php';"
)
WRITE_FILE = (
    "$p = $argv[1]; $d = dirname($p); if (!is_dir($d)) { mkdir($d, 0777, true); }"
    " if (file_put_contents($p, stream_get_contents(STDIN)) === false) {"
    " fwrite(STDERR, 'cannot write ' . $p); exit(1); }"
)
READ_FILE = (
    "$p = $argv[1]; $max = (int) $argv[2]; $h = @fopen($p, 'rb'); if ($h === false) {"
    " fwrite(STDERR, 'cannot read ' . $p); exit(1); } $size = fstat($h)['size'];"
    " if ($size > $max) { fwrite(STDERR, 'too-large'); exit(3); } fpassthru($h);"
)


class NativeSandbox:
    """One native WordPress: a folder on the host and the binds that show it to confined PHP."""

    def __init__(
        self,
        sandbox_id: str,
        work_dir: Path,
        binds: list[PathBind],
        basedir: str,
        wordpress_version: str,
        php_version: str,
        settings: CodeboxSettings,
        *,
        opcache: bool,
        table_prefix: str,
        relay: PreviewRelay | None = None,
        process_cap: ProcessCap | None = None,
        disk: DiskBudget | None = None,
        host_id: SandboxId | None = None,
        owns_host_id: bool = False,
        live_mirrors: list[LiveMirror] | None = None,
    ) -> None:
        self.id = sandbox_id
        self.host_id = host_id  # its uid on the host, as root (runtime/sandbox_ids.py)
        self._owns_host_id = owns_host_id  # taken for it alone (not the session's): given up at disposal
        self.table_prefix = table_prefix
        self.disk = disk
        self.process_cap = process_cap or ProcessCap(None, 0, "not asked for")
        self.work_dir = work_dir
        self._relay = relay
        self.preview_url = relay.url if relay is not None else ""
        # the address WordPress's pages are served as (its home: the preview, or the public URL in front of it)
        self._site = urllib.parse.urlsplit(relay.site_url if relay is not None else "http://127.0.0.1")
        self.wordpress_version = wordpress_version
        self.php_version = php_version
        self._binds = binds
        self._basedir = basedir
        self._settings = settings
        self._opcache = opcache
        self._bwrap = find_bwrap()
        self._running: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()
        self._aborted: str | None = None
        self._disposed = False
        self._budget_hit: dict[str, Any] | None = None
        self.worker = PhpWorker(work_dir / "worker", self._worker_argv)
        # its :live mounts' writes, copied from the disk budget into the user's folders (runtime/live_mirror.py)
        self._mirror = MirrorThread(live_mirrors) if live_mirrors else None
        self.live_mirror_errors: list[str] = []

    # -- one confined process ----------------------------------------------------------------------------
    def php_argv(
        self,
        php_args: list[str],
        env: dict[str, str] | None = None,
        *,
        opcache: bool = False,
        timeout_s: float = 0.0,
        cgi: bool = False,
    ) -> list[str]:
        """The whole command line of one confined PHP process running ``php_args``. ``opcache``: compiled
        scripts come from (and go to) the sandbox's own copy of the opcache seed, for the sandbox's own
        commands only; Codebox's probes and file transfers never read a cache the sandbox could have written.
        ``cgi``: the page-request worker (runtime/native_worker.py): the CGI binary, errors shown in the page
        (as Playground shows them), no ``.user.ini`` read (the sandbox could plant one), compiled scripts
        kept in the worker's memory."""
        bwrap = php_bwrap_argv(
            bwrap=self._bwrap,
            php=php_cgi_binary() if cgi else host_php().binary,
            binds=self._binds,
            env={**BASE_ENV, **(env or {})},
            chdir=CORE,
            host_uid=self.host_uid,
        )
        return self.process_cap.wrap(
            [*self.process_limits(timeout_s), *bwrap, *self.php_ini_args(opcache=opcache, cgi=cgi), *php_args]
        )

    def _worker_argv(self) -> list[str]:
        """The confined ``php-cgi`` of the page-request worker (FastCGI on its standard input)."""
        env = {"PHP_FCGI_CHILDREN": str(CHILDREN), "PHP_FCGI_MAX_REQUESTS": str(MAX_REQUESTS)}
        return self.php_argv([], env, cgi=True)

    def php_ini_args(self, *, opcache: bool, cgi: bool = False, basedir: str | None = None) -> list[str]:
        """PHP's ``-d`` settings for every confined PHP process (``opcache``, ``cgi``: as :meth:`php_argv`;
        ``basedir``: another ``open_basedir`` than the sandbox's, for Codebox's own file helper)."""
        settings = [
            f"open_basedir={basedir or self._basedir}",
            f"sys_temp_dir={TMP}",
            f"upload_tmp_dir={TMP}",
            f"memory_limit={PHP_MEMORY_LIMIT}",
            "display_errors=" + ("1" if cgi else "stderr"),
            "log_errors=0",
            "auto_prepend_file=",
            "auto_append_file=",
            "user_ini.filename=",
            "cgi.fix_pathinfo=0",
            "expose_php=0",
        ]
        if cgi:
            settings += OPCACHE_WORKER if self._opcache else OPCACHE_OFF
        else:
            settings += OPCACHE_ON if opcache and self._opcache else OPCACHE_OFF
        return [part for setting in settings for part in ("-d", setting)]

    def process_limits(self, timeout_s: float) -> list[str]:
        """``prlimit …  --`` for one confined process: CPU seconds, the write budget (the largest file) and, when
        the sandbox runs as its own uid on the host, the process count."""
        if not shutil.which("prlimit"):
            return []
        budget = self._settings.sandbox_write_budget
        cpu_seconds = int(max(timeout_s, self._settings.command_timeout_s)) + 5  # the wall clock kills first
        return [
            "prlimit",
            f"--cpu={cpu_seconds}",
            *([f"--fsize={budget}"] if budget else []),
            *([f"--nproc={MAX_SANDBOX_PROCESSES}"] if drops_to_sandbox_uid() else []),
            "--",
        ]

    @property
    def host_uid(self) -> int | None:
        """The uid (and gid) its processes run as on the host, as root; None otherwise."""
        return host_uid(self.host_id)

    @property
    def basedir(self) -> str:
        """PHP's ``open_basedir`` in this sandbox (``:``-separated folders)."""
        return self._basedir

    @property
    def base_env(self) -> dict[str, str]:
        """The environment every confined process starts with."""
        return dict(BASE_ENV)

    @property
    def bwrap(self) -> str:
        return self._bwrap

    @property
    def binds(self) -> list[PathBind]:
        """What every confined process of this sandbox sees (in bwrap's order)."""
        return list(self._binds)

    def _exec(
        self,
        php_args: list[str],
        stdin: bytes,
        timeout_s: float,
        *,
        env: dict[str, str] | None = None,
        what: str = "run",
        on_stderr: Callable[[str], None] | None = None,
    ) -> PhpResult:
        code, out, err = self._exec_raw(
            php_args,
            stdin,
            timeout_s,
            env=env,
            what=what,
            limit=int(self._settings.max_command_output_bytes),
            on_stderr=on_stderr,
        )
        truncated = {name: cut for name, cut in (("stdout", out.truncation()), ("stderr", err.truncation())) if cut}
        return PhpResult(
            text=out.kept.decode("utf-8", "replace"),
            exit_code=code,
            errors=err.kept.decode("utf-8", "replace"),
            truncated=truncated or None,
        )

    def _exec_raw(
        self,
        php_args: list[str],
        stdin: bytes,
        timeout_s: float,
        *,
        env: dict[str, str] | None,
        what: str,
        limit: int,
        on_stderr: Callable[[str], None] | None = None,
        argv: list[str] | None = None,
    ) -> tuple[int, CappedReader, CappedReader]:
        """Run one confined PHP process to its end (or kill it at ``timeout_s``): its exit code and its
        output streams, each cut at ``limit`` bytes. ``argv``: another whole confined command line instead
        (the sandbox shell, runtime/native_shell.py)."""
        if self._aborted is not None:
            raise SandboxError(f"The sandbox {self._aborted}", code="sandbox-aborted")
        if self._disposed:
            raise SandboxError("The sandbox was disposed", code="sandbox-disposed")
        try:
            if argv is None:
                argv = self.php_argv(php_args, env, opcache=what in OWN_CODE, timeout_s=timeout_s)
            process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as error:
            raise SandboxError(
                f"could not start the confined PHP process: {error}", code="native-start-failed"
            ) from error
        with self._lock:
            self._running.add(process)
            # an abort that came while the process was starting did not see it: it is killed here instead
            missed_by_abort = self._aborted is not None
        if missed_by_abort:
            kill_group(process)
        try:
            out = CappedReader(process.stdout, limit)  # type: ignore[arg-type]
            err = CappedReader(process.stderr, limit, on_stderr)  # type: ignore[arg-type]
            feeder = threading.Thread(target=feed_stdin, args=(process.stdin, stdin), daemon=True)
            feeder.start()
            try:
                code = wait_for_exit(process, timeout_s)
            except subprocess.TimeoutExpired:
                kill_group(process)
                raise SandboxError(
                    f"Sandbox {what} timed out after {timeout_s:g} s; its PHP process was killed",
                    code="sandbox-timeout",
                    details={"op": what, "timeoutSeconds": timeout_s},
                ) from None
            for reader in (out, err):
                reader.thread.join(timeout=30)
        finally:
            with self._lock:
                self._running.discard(process)
        if self._aborted is not None:
            raise SandboxError(f"The sandbox {self._aborted}", code="sandbox-aborted")
        if code == 1 and err.kept.startswith(b"bwrap: ") and not out.kept:
            # bubblewrap could not build the sandbox (PHP never ran): fail closed, saying why
            reason = err.kept.decode("utf-8", "replace").strip()
            raise SandboxError(
                f"the native sandbox could not be confined: {reason}", code="confinement-failed", details={"op": what}
            )
        # bwrap reports a signal that killed PHP as 128 + its number (a PHP exit(153) reads the same: it can
        # only add a flag to its own run)
        if code in (-signal.SIGXFSZ, 128 + signal.SIGXFSZ):  # prlimit's file-size cap: the write budget
            self._budget_hit = {"path": "", "budgetBytes": int(self._settings.sandbox_write_budget)}
            err.kept += (
                b"\ncodebox: PHP was stopped for writing a file larger than the sandbox's write budget "
                b"(CODEBOX_SANDBOX_WRITE_BUDGET)\n"
            )
        elif code in (-signal.SIGXCPU, 128 + signal.SIGXCPU):
            err.kept += b"\ncodebox: PHP was stopped at its CPU-time limit\n"
        self._mirror_live()
        if self._note_disk_spent():  # the whole sandbox's data is full (what PHP made of the failed writes aside)
            err.kept += (
                b"\ncodebox: the sandbox's files reached its write budget (CODEBOX_SANDBOX_WRITE_BUDGET); "
                b"further writes fail with 'No space left on device'\n"
            )
        return (code if code >= 0 else 128 - code), out, err

    # -- the Sandbox protocol -------------------------------------------------------------------------
    def run_php(self, code: str, timeout_s: float) -> PhpResult:
        """``code`` (a whole PHP file's text) as PHP's standard input, working folder ``/wordpress``."""
        return self._exec([], code.encode("utf-8"), timeout_s)

    def probe_php(self, code: str, timeout_s: float) -> PhpResult:
        """Codebox's own measurement. The CLI reads no ``.user.ini``, its ``php.ini`` is the host's (read-only
        inside), prepend/append files are forced off and opcache is off (the sandbox can write its file cache):
        nothing the sandbox planted runs with ``code`` (docs/security.md, "What the sandbox can and cannot
        forge")."""
        return self._exec([], code.encode("utf-8"), timeout_s, what="probe")

    def run_cli(
        self,
        argv: list[str],
        timeout_s: float,
        env: dict[str, str] | None = None,
        on_stderr: Callable[[str], None] | None = None,
    ) -> PhpResult:
        """A PHP command line (``php script args…``); the sandbox runs nothing but PHP."""
        if not argv or argv[0] not in PHP_NAMES:
            raise BadInputError(
                f"the native backend runs PHP command lines only, not {argv[:1]}", code="native-not-php", field="argv"
            )
        return self._exec(argv[1:], b"", timeout_s, env=env, what="cli", on_stderr=on_stderr)

    def request(self, path: str, timeout_s: float, method: str = "GET") -> HttpResult:
        """One page request (``path`` with its query) as the preview would serve it."""
        response = self.cgi(CgiRequest(method.upper(), path), timeout_s)
        return HttpResult(
            status=response.status, headers=dict(response.headers), text=response.body.decode("utf-8", "replace")
        )

    def cgi(self, request: CgiRequest, timeout_s: float) -> CgiResponse:
        """``request`` served by the sandbox's persistent PHP worker running its router
        (runtime/native_worker.py); the answer is the sandbox's and is parsed as untrusted bytes
        (runtime/fastcgi.py, runtime/native_cgi.py)."""
        check_request(request.method, request.target)
        if len(request.body) > MAX_REQUEST_BODY_BYTES:
            raise SandboxError(
                f"a page request's body is limited to {MAX_REQUEST_BODY_BYTES} bytes",
                code="invalid-request",
                details={"bytes": len(request.body)},
            )
        if self._aborted is not None:
            raise SandboxError(f"The sandbox {self._aborted}", code="sandbox-aborted")
        if self._disposed:
            raise SandboxError("The sandbox was disposed", code="sandbox-disposed")
        site = self._site
        params = {
            **BASE_ENV,
            **cgi_environment(
                request,
                host=site.hostname or "127.0.0.1",
                port=site.port or (443 if site.scheme == "https" else 80),
                http_host=site.netloc,
            ),
        }
        try:
            answer = self.worker.serve(
                params, request.body, timeout_s=timeout_s, limit=MAX_HEADER_BYTES + MAX_BODY_BYTES
            )
        except SandboxError:
            if self._aborted is not None:  # the worker was stopped under the request: say why
                raise SandboxError(f"The sandbox {self._aborted}", code="sandbox-aborted") from None
            raise
        response = parse_cgi_response(bytes(answer.stdout), body_truncated=answer.truncated)
        self._mirror_live()
        if self._note_disk_spent():
            response.problems.append("the sandbox's files reached its write budget")
        if not answer.stdout and (answer.app_status or answer.protocol_status):
            reason = answer.stderr.decode("utf-8", "replace").strip()[:500]
            response.problems.append(
                f"php-cgi ended the request with status {answer.app_status}"
                f" (protocol status {answer.protocol_status}): {reason}"
            )
        return response

    def write_file(self, path: str, data: bytes, timeout_s: float = 30.0) -> None:
        """Written by a confined PHP process: the host never follows a path the sandbox could have planted."""
        result = self._exec(["-r", WRITE_FILE, "--", path], data, timeout_s, what="writeFile")
        if result.exit_code != 0:
            raise SandboxError(
                f"could not write {path} in the sandbox: {result.errors.strip()[:300]}",
                code="sandbox-write-failed",
                details={"path": path},
            )

    def read_file(self, path: str, timeout_s: float = 30.0, *, max_bytes: int) -> bytes:
        """Read by a confined PHP process; never more than ``max_bytes`` crosses to the host."""
        code, out, err = self._exec_raw(
            ["-r", READ_FILE, "--", path, str(int(max_bytes))],
            b"",
            timeout_s,
            env=None,
            what="readFile",
            limit=int(max_bytes) + 1,
        )
        if code == 3 or out.total > max_bytes:
            raise SandboxError(f"{path} is over the {max_bytes}-byte limit", code="file-too-large")
        if code != 0:
            raise SandboxError(
                f"could not read {path} in the sandbox: {err.kept.decode('utf-8', 'replace')[:300]}",
                code="sandbox-read-failed",
                details={"path": path},
            )
        return bytes(out.kept)

    def _mirror_live(self) -> None:
        """A command or page has ended: its writes into ``:live`` mounts reach the user's folders now."""
        if self._mirror is not None:
            self._mirror.sync_now()

    def _note_disk_spent(self) -> bool:
        """Whether the sandbox's data file system is full (its write budget spent); the run is flagged then."""
        if self.disk is None or not self.disk.spent():
            return False
        self._budget_hit = {"path": "", "budgetBytes": int(self._settings.sandbox_write_budget)}
        return True

    def shell(self, params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """One ``codebox exec`` command line in this sandbox's wall (runtime/native_shell.py); its answer is
        sandbox-written data."""

        def run(argv: list[str], stdin: bytes, limit: int) -> tuple[int, bytes, bytes]:
            code, out, err = self._exec_raw(
                [], stdin, timeout_s, env=None, what="shell", limit=limit, argv=self.process_cap.wrap(argv)
            )
            return code, bytes(out.kept) if out.truncation() is None else b"", bytes(err.kept)

        return run_shell(self, params, timeout_s, run)

    def write_budget_exceeded(self) -> dict[str, Any] | None:
        """Whether a PHP process of this sandbox was stopped for a file over the write budget (the session
        flags the run ``write-budget-exceeded``); the native cap is per file, so no path is known."""
        return self._budget_hit

    def abort(self, reason: str) -> None:
        """Kill every confined process of the sandbox and start no other one. Under the lock a process being
        started is either already registered (killed here) or sees the abort once it is (``_exec_raw``)."""
        with self._lock:
            self._aborted = reason
            running = list(self._running)
        self.worker.halt(reason)
        for process in running:
            kill_group(process)

    def dispose(self) -> None:
        if self._disposed:
            return
        if self._relay is not None:
            self._relay.close()
        self.abort("was disposed")
        self._disposed = True
        self.worker.close()
        self.process_cap.remove()
        if self._mirror is not None:  # its processes are gone: the last pass copies what they wrote last
            self.live_mirror_errors = self._mirror.finish()
        if self.disk is not None:
            self.disk.remove()
        remove_tree(self.work_dir)
        remove_tree(readonly_dir(self.work_dir))
        if self.host_id is not None and self._owns_host_id:  # its processes are gone
            self.host_id.release()


class NativeBackend:
    name = NAME

    def __init__(self, settings: CodeboxSettings | None = None) -> None:
        self.settings = settings or get_settings()

    def boot(self, spec: SandboxSpec, on_progress: ProgressCallback | None = None) -> NativeSandbox:
        def report(phase: str, data: dict[str, Any] | None = None) -> None:
            if on_progress:
                on_progress(phase, data or {})

        check_native_php(spec.php)
        if spec.blueprint is not None:
            raise BadInputError(
                "blueprints need the Playground backend; use --backend playground",
                code="native-unsupported",
                field="blueprint",
            )
        check_native_mount_targets([m.target for m in [*spec.mounts, *spec.extra_mounts]])
        find_bwrap()
        started = time.monotonic()
        build = resolve_build(spec.wp)
        report("resolving-wordpress", {"version": build.version})
        prepared = ensure_prepared_install(
            build, ensure_golden_site(build, self.settings.golden_dir), self.settings.home / "native"
        )
        seed = ensure_opcache_seed(prepared, host_php(), self._make_seed)
        sandbox = self._boot(spec, build.version, prepared, report, opcache_seed=seed, preview=True)
        report("ready", {"ms": int((time.monotonic() - started) * 1000)})
        return sandbox

    def _boot(
        self,
        spec: SandboxSpec,
        version: str,
        prepared: PreparedInstall,
        report: ProgressCallback,
        *,
        opcache_seed: Path | None = None,
        opcache_dir: Path | None = None,
        preview: bool = False,
    ) -> NativeSandbox:
        """The sandbox folder and its binds. ``opcache_seed``: copied in as the sandbox's own compiled-script
        cache; ``opcache_dir``: bound as that cache as it is (only while the seed itself is made); ``preview``:
        with its preview relay, whose address WordPress takes as its own."""
        sandboxes_root = self.settings.home / "sandboxes"
        sandboxes_root.mkdir(parents=True, exist_ok=True)
        _release_abandoned_once(sandboxes_root)
        sweep_abandoned_once(sandboxes_root)
        sandbox_id = "sandbox-native-" + secrets.token_hex(6)
        table_prefix = table_prefix_for(sandbox_id)
        work_dir = sandboxes_root / sandbox_id
        work_dir.mkdir()
        relay = (
            PreviewRelay(self.settings.command_timeout_s, spec.preview_port or 0, spec.site_url) if preview else None
        )
        disk: DiskBudget | None = None
        live: list[tuple[Path, LiveMirror]] = []
        host_id = spec.host_id  # the session's, which its :live folders were handed to; else one of its own
        owns_host_id = host_id is None
        try:
            if owns_host_id:
                host_id = allocate()
            (work_dir / OWNER_FILE).write_text(str(os.getpid()), encoding="ascii")
            readonly_dir(work_dir).mkdir(parents=True, exist_ok=True)
            (readonly_dir(work_dir) / OWNER_FILE).write_text(str(os.getpid()), encoding="ascii")
            # everything the sandbox writes (its own data, its changes to copy-on-write mounts) in one size-limited
            # file system: room for what it starts with, then (settle) exactly that plus the budget
            budget = int(self.settings.sandbox_write_budget)
            starting = [
                _footprint(prepared.template),
                *([_footprint(opcache_seed)] if opcache_seed is not None else []),
            ]
            disk = DiskBudget.make(
                work_dir / DATA,
                budget and budget + sum(size for size, _ in starting),
                sum(entries for _, entries in starting),
            )
            report("copying-site", {})
            copy_tree(prepared.template, disk.folder / "wp-content")
            # the sandbox's own table prefix, given to its copy before any sandbox process exists
            rename_database_prefix(
                disk.folder / "wp-content" / "database" / ".ht.sqlite", PrefixRename(DEFAULT_TABLE_PREFIX, table_prefix)
            )
            (disk.folder / "tmp").mkdir()
            shared_cache: list[PathBind] = []
            if opcache_seed is not None:
                opcache_dir = disk.folder / "opcache"
                shared_cache = opcache_copy(opcache_seed, opcache_dir)
            mounts = sandbox_mounts(
                spec,
                work_dir,
                report,
                place=partial(disk.take_in, uid=host_uid(host_id)) if disk.mounted else None,
                system_view=in_system_view,
            )
            live = take_in_live_mounts(spec, disk, mounts) if disk.mounted else []
            disk.settle(budget)
            basedir = open_basedir([m["vfsPath"] for m in mounts])
            write_config(
                work_dir / "config",
                sandbox_id,
                salt_key(self.settings.home / "native"),
                table_prefix=table_prefix,
                basedir=basedir,
                block_external_http=spec.policy.network_denied,
                site_url=relay.site_url if relay is not None else "http://127.0.0.1",
            )
            binds = [
                PathBind(str(prepared.core), CORE, False),
                PathBind(str(disk.folder / "wp-content"), WP_CONTENT, True),
                PathBind(str(work_dir / "config" / "wp-config.php"), f"{CORE}/wp-config.php", False),
                PathBind(str(prepared.db_dropin), f"{WP_CONTENT}/db.php", False),
                PathBind(str(work_dir / "config"), CONFIG_DIR, False),
                PathBind(str(prepared.sqlite_plugin), SQLITE_DIR, False),
                PathBind(str(disk.folder / "tmp"), TMP, True),
            ]
            if opcache_dir is not None:
                binds += [PathBind(str(opcache_dir), OPCACHE_DIR, True), *shared_cache]
            binds += [PathBind(m["hostPath"], m["vfsPath"], _writable(m, work_dir)) for m in mounts]
            taken_in = {str(copy.path) for copy in spec.private_copies.values() if copy.hand_back is not None}
            taken_in |= {str(point) for point, _ in live}
            hand_over_folders(
                [
                    Path(b.source)
                    for b in binds
                    if b.writable and Path(b.source).parent in (work_dir, disk.folder) and b.source not in taken_in
                ]
                + ([opcache_dir] if opcache_seed is None and opcache_dir is not None else []),
                host_uid(host_id),
            )
        except BaseException:
            if host_id is not None and owns_host_id:
                host_id.release()
            if relay is not None:
                relay.close()
            for copy in spec.private_copies.values():
                if copy.hand_back is not None:  # taken in: the overlay goes with the file system, the copy stays
                    copy.hand_back, copy.path = None, copy.staged
            for _, mirror in live:
                mirror.close()
            if disk is not None:
                disk.remove()
            remove_tree(work_dir)
            remove_tree(readonly_dir(work_dir))
            raise
        sandbox = NativeSandbox(
            sandbox_id,
            work_dir,
            binds,
            basedir,
            version,
            host_php().version,
            self.settings,
            opcache=opcache_dir is not None,
            table_prefix=table_prefix,
            relay=relay,
            process_cap=ProcessCap.make(sandbox_id),
            disk=disk,
            host_id=host_id,
            owns_host_id=owns_host_id,
            live_mirrors=[mirror for _, mirror in live],
        )
        if relay is not None:
            relay.start(sandbox.cgi)
        return sandbox

    def _make_seed(self, prepared: PreparedInstall, folder: Path) -> None:
        """Fill ``folder`` with the compiled-script cache of a clean sandbox loading WordPress: no mounts, no
        user code, only Codebox's configuration and core."""
        spec = SandboxSpec(mounts=[], policy=RuntimePolicy(commands=["wordpress.run-php"]), php=host_php().series)
        sandbox = self._boot(spec, "seed", prepared, lambda *_: None, opcache_dir=folder)
        try:
            sandbox.run_php(SEED_CODE, 300)
        finally:
            sandbox.dispose()
            reclaim(folder)  # every later sandbox reads it: its files are Codebox's, not the sandbox uid's


_released: set[str] = set()


def _release_abandoned_once(sandboxes_root: Path) -> None:
    """Once per process and root, before the sweep removes them: what native sandboxes whose process died
    left outside their folders — their process groups. (Their data file systems are detached by the sweep's
    removal itself, never through a link: runtime/leftover_mounts.py.)"""
    if str(sandboxes_root) in _released:
        return
    _released.add(str(sandboxes_root))
    for folder in abandoned_sandbox_dirs(sandboxes_root, prefix="sandbox-native-"):
        ProcessCap.existing(folder.name).remove(wait_s=0)


@cache
def _footprint(folder: Path) -> tuple[int, int]:
    """:func:`footprint` of a folder every sandbox starts from (the template, the opcache seed): measured once."""
    return footprint(folder)


def _writable(mount: dict[str, str], work_dir: Path) -> bool:
    """Whether a mount from :func:`sandbox_mounts` is bound writable: a staged read-only copy, a folder of the
    system view and a ``.git`` shield are not; a private copy (moved into ``work_dir``) and a live folder are."""
    if mount.get("systemView"):
        return False
    host = Path(mount["hostPath"])
    staged = readonly_dir(work_dir)
    if host == staged or staged in host.parents:
        return False
    return not (host.parent == work_dir and host.name.startswith("git-shield-"))
