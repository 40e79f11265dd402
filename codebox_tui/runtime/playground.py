"""The WordPress Playground backend: sandboxes hosted by a shared Node sidecar, fully offline.

Boot path: resolve the shipped WordPress build → ensure its golden pre-installed site → copy it
for this sandbox → stage read-only mounts → ``runCLI`` in the sidecar with the copy mounted at
``/wordpress`` (no install, WP-Cron off) → warm PHP by loading WordPress once.

Sidecars are shared by sandboxes with the same network policy and the same external host folders:
a confined sidecar (docs/security.md, "Layers") sees only the folders bound when it started.
"""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures import wait as wait_futures
from pathlib import Path
from typing import Any

from codebox_tui.contracts.runtime import RuntimePolicy
from codebox_tui.errors import BadInputError, SandboxError
from codebox_tui.runtime.backend import HttpResult, PhpResult, ProgressCallback, SandboxSpec
from codebox_tui.runtime.confinement import Bind, covered, external_binds, readonly_dir
from codebox_tui.runtime.exit_work import exit_waits_for
from codebox_tui.runtime.golden import (
    ensure_golden_site,
    has_prepared_site,
    make_sandbox_dir,
    opcache_seed,
    pool_busy,
    save_opcache_seed,
    take_prepared_site,
)
from codebox_tui.runtime.mounts import remove_tree
from codebox_tui.runtime.pool_worker import start_pool_worker
from codebox_tui.runtime.reaper import OWNER_FILE
from codebox_tui.runtime.sandbox_dirs import sandbox_mounts, sandbox_written, sweep_abandoned_once
from codebox_tui.runtime.sandbox_ids import SandboxId, host_uid
from codebox_tui.runtime.sandbox_owner import hand_over_folders
from codebox_tui.runtime.sidecar import Sidecar
from codebox_tui.runtime.table_prefix import DEFAULT_TABLE_PREFIX
from codebox_tui.runtime.wordpress_builds import WordPressBuild, resolve_build
from codebox_tui.settings import CodeboxSettings, get_settings
from codebox_tui.versions import SUPPORTED_PHP

_sidecars: dict[str, Sidecar] = {}
_sidecars_lock = threading.Lock()


def network_policy_key(policy: RuntimePolicy) -> str:
    if isinstance(policy.network, str):
        return policy.network
    return json.dumps({"allowHosts": sorted(policy.network.allowHosts)})


def sidecar_key(policy: RuntimePolicy, binds: tuple[Bind, ...], settings: CodeboxSettings) -> str:
    """Sidecars are shared per network policy, set of external host folders, Codebox home and write budget:
    what a confined sidecar sees (its sandboxes root, Playground home, binds) is fixed when it starts."""
    return "|".join(
        [
            str(settings.home),
            network_policy_key(policy),
            f"budget={settings.sandbox_write_budget}",
            *(bind.label for bind in binds),
        ]
    )


def spec_binds(spec: SandboxSpec, sandboxes_root: Path) -> tuple[Bind, ...]:
    """The external host folders ``spec``'s mounts expose to the sidecar as they are: read-write
    mounts that write through to the host folder (read-only mounts are staged copies inside the
    sandboxes root; a copy-on-write mount's private copy is there too)."""
    live = [
        (m.source, True)
        for m in [*spec.mounts, *spec.extra_mounts]
        if m.mode == "readwrite" and getattr(m, "write_mode", "live") == "live"
    ]
    return external_binds(live, sandboxes_root)


def get_sidecar(settings: CodeboxSettings, policy: RuntimePolicy, binds: tuple[Bind, ...] = ()) -> Sidecar:
    """The shared sidecar for this network policy and these external binds, started on first use."""
    key = sidecar_key(policy, binds, settings)
    idle: list[Sidecar] = []
    with _sidecars_lock:
        sidecar = _sidecars.get(key)
        if sidecar is None or not sidecar.alive:
            sidecars_root = settings.home / "sandboxes"
            sidecars_root.mkdir(parents=True, exist_ok=True)
            sweep_abandoned_once(sidecars_root)
            idle = _idle_bound_sidecars() if binds else []
            sidecar = Sidecar(
                node=settings.node,
                home=settings.playground_home,
                network_policy=network_policy_key(policy),
                confinement=settings.confinement,
                sandboxes_root=sidecars_root,
                binds=binds,
                wasm_compiler=settings.wasm_compiler,
                write_budget=settings.sandbox_write_budget,
            )
            _sidecars[key] = sidecar
    for stale in idle:
        threading.Thread(target=stale.close, name="codebox-sidecar-close", daemon=True).start()
    return sidecar


MAX_IDLE_BOUND_SIDECARS = 2


def _idle_bound_sidecars() -> list[Sidecar]:
    """Called with ``_sidecars_lock`` held before another sidecar with external binds starts: the
    least recently used idle ones beyond :data:`MAX_IDLE_BOUND_SIDECARS - 1`, removed from the table
    (each costs a Node process; a sidecar without binds is kept for the common case)."""
    idle = sorted(
        ((key, s) for key, s in _sidecars.items() if s.binds and s.live_sandboxes <= 0 and s.alive),
        key=lambda item: item[1].last_used,
    )
    closing = idle[: max(0, len(idle) - (MAX_IDLE_BOUND_SIDECARS - 1))]
    for key, _ in closing:
        del _sidecars[key]
    return [s for _, s in closing]


def discard_spare_sandboxes() -> None:
    """Dispose every pre-booted spare (waiting for ones still booting); sidecars keep running."""
    with _spares_lock:
        spares = list(_spares.values())
        _spares.clear()
    for pending in spares:
        try:
            pending.result(timeout=130).dispose()
        except BaseException:
            pass


def spares_in_hand() -> int:
    """How many spares this process has ready or booting."""
    with _spares_lock:
        return len(_spares)


def wait_for_spares(timeout_s: float) -> bool:
    """Wait until every spare this process is booting is ready (or failed); False if one still boots after
    ``timeout_s``. A spare is booted when the sandbox that took the previous one stops (see ``boot``)."""
    with _spares_lock:
        pending = list(_spares.values())
    wait_futures(pending, timeout=timeout_s)
    return all(future.done() for future in pending)


def shutdown_sidecars() -> None:
    discard_spare_sandboxes()
    with _sidecars_lock:
        items = list(_sidecars.values())
        _sidecars.clear()
    for sidecar in items:
        sidecar.close()


# -- pre-booted spare sandboxes (warm path) -------------------------------------------------------
# A long-lived process (the TUI, a test session, a benchmark) can keep one booted, mount-less spare
# per (WordPress, PHP, network policy); the next boot takes it, attaches its mounts (a few ms) and
# a new spare boots in the background. Setting ``spare_sandboxes`` (default "auto"): on in the TUI
# and from a process's second sandbox on; one-shot `codebox run` leaves it off (on 2 cores the
# background boot would only compete with the run).
_spares: dict[str, Future[PlaygroundSandbox]] = {}
_spares_lock = threading.Lock()
_spares_override: bool | None = None
_boots_in_process = 0
_starting: dict[str, Future[Sidecar]] = {}


def _wait_for_preparation(build: WordPressBuild, php: str, golden_root: Path, timeout_s: float) -> bool:
    """Wait (up to ``timeout_s``) while the detached pool worker is copying a site (cheaper than starting a
    second copy); False when none was at work."""
    if not pool_busy(build, php, golden_root):
        return False
    deadline = time.monotonic() + timeout_s
    while pool_busy(build, php, golden_root) and not has_prepared_site(build, php, golden_root):
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)  # another process holds the lock: nothing to be notified by
    return True


def _spare_key(build: WordPressBuild, spec: SandboxSpec, binds: tuple[Bind, ...], settings: CodeboxSettings) -> str:
    """Spares are interchangeable for the same WordPress build, PHP version and sidecar (network
    policy and external binds: a spare is only used by a boot whose folders its sidecar sees)."""
    return f"{build.version}|{spec.php}|{sidecar_key(spec.policy, binds, settings)}"


_starter = ThreadPoolExecutor(max_workers=2, thread_name_prefix="codebox-sidecar-start")


def enable_spare_sandboxes(enabled: bool | None = True) -> None:
    """Force spare sandboxes on or off for this process (``None``: back to the ``spare_sandboxes`` setting)."""
    global _spares_override
    _spares_override = enabled


def spares_wanted(
    mode: str, boots_in_process: int, override: bool | None = None, interactive: bool | None = None
) -> bool:
    """Whether to keep a pre-booted spare: forced, ``on``/``off``, or ``auto`` (long-lived processes only)."""
    if override is not None:
        return override
    if mode in ("on", "off"):
        return mode == "on"
    if interactive is None:
        interactive = "codebox_tui.app" in sys.modules  # the TUI is running in this process
    return interactive or boots_in_process >= 2


def _failed_run(message: str) -> PhpResult:
    """Split php-wasm's "failed with exit code N === Stdout === … === Stderr === …" message."""
    match = re.search(r"exit code (\d+)", message)
    code = int(match.group(1)) if match else 255
    stdout, stderr = "", message
    if "=== Stdout ===" in message:
        rest = message.split("=== Stdout ===", 1)[1]
        stdout, _, stderr = rest.partition("=== Stderr ===")
        stdout, stderr = stdout.strip("\n").removeprefix(" "), stderr.strip("\n").removeprefix(" ")
    cut = re.search(r"\[codebox: output truncated: (\d+) of (\d+) bytes omitted\]", message)
    truncated = None
    if cut:  # the sidecar capped the message (which carries the whole output) like any output
        omitted, total = int(cut.group(1)), int(cut.group(2))
        truncated = {
            "output": {
                "totalBytes": total,
                "keptBytes": total - omitted,
                "omittedBytes": omitted,
                "limitBytes": _max_output_bytes(),
            }
        }
    return PhpResult(text=stdout, exit_code=code or 255, errors=stderr, truncated=truncated)


def _max_output_bytes() -> int:
    """The per-stream output cap the sidecar applies before sending a result (docs/security-secrets.md)."""
    return int(get_settings().max_command_output_bytes)


class PlaygroundSandbox:
    """One live WordPress in the sidecar. Its private files live under ``work_dir`` until disposed."""

    def __init__(
        self,
        sidecar: Sidecar,
        sandbox_id: str,
        work_dir: Path,
        preview_url: str,
        wordpress_version: str,
        php_version: str,
        golden_site: Path | None = None,
    ) -> None:
        self.id = sandbox_id
        self.sidecar = sidecar
        self.work_dir = work_dir
        self.preview_url = preview_url
        self.wordpress_version = wordpress_version
        self.php_version = php_version
        self.table_prefix = DEFAULT_TABLE_PREFIX  # its site's own wp-config.php
        # the host folder behind /wordpress and the golden site it was copied from: core is compared on the host
        # against the golden site's digests after a run (runtime/core_files.py)
        self.site_dir = work_dir / "wordpress"
        self.golden_site = golden_site
        self._disposed = False
        # run once, when the sandbox is stopped (the backend refills the spare it was: see ``boot``)
        self.on_stopped: list[Callable[[], None]] = []
        sidecar.live_sandboxes += 1

    def run_php(self, code: str, timeout_s: float) -> PhpResult:
        return self._php("run", code, timeout_s)

    def probe_php(self, code: str, timeout_s: float) -> PhpResult:
        """Codebox's own measurement: ``code`` runs with Codebox's php.ini, so nothing the sandbox planted in
        ``/internal/shared`` (prepend, preload, php.ini, compiled scripts) runs with it (docs/security.md,
        "What the sandbox can and cannot forge"; ``node/probeguard.mjs``)."""
        return self._php("probe", code, timeout_s)

    def _php(self, op: str, code: str, timeout_s: float) -> PhpResult:
        """One PHP request through the sidecar (``run``, or ``probe`` for Codebox's own measurements)."""
        try:
            result = self.sidecar.request(
                op, {"sandbox": self.id, "code": code, "maxOutputBytes": _max_output_bytes()}, timeout_s
            )
        except SandboxError as error:
            if error.code in ("sidecar-error", "Error"):
                return _failed_run(error.message)
            raise
        return PhpResult(
            text=str(result.get("text", "")),
            exit_code=int(result.get("exitCode") or 0),
            errors=str(result.get("errors") or ""),
            truncated=result.get("truncated") or None,
        )

    def run_cli(
        self,
        argv: list[str],
        timeout_s: float,
        env: dict[str, str] | None = None,
        on_stderr: Callable[[str], None] | None = None,
    ) -> PhpResult:
        params: dict[str, Any] = {"sandbox": self.id, "argv": argv, "maxOutputBytes": _max_output_bytes()}
        if env:
            params["env"] = env
        if on_stderr is not None:
            params["streamStderr"] = True
        result = self.sidecar.request("cli", params, timeout_s, on_output=on_stderr)
        return PhpResult(
            text=str(result.get("stdout", "")),
            exit_code=int(result.get("exitCode") or 0),
            errors=str(result.get("stderr") or ""),
            truncated=result.get("truncated") or None,
        )

    def request(self, path: str, timeout_s: float, method: str = "GET") -> HttpResult:
        result = self.sidecar.request("request", {"sandbox": self.id, "url": path, "method": method}, timeout_s)
        return HttpResult(
            status=int(result.get("status", 0)),
            headers=dict(result.get("headers") or {}),
            text=str(result.get("text", "")),
        )

    def write_file(self, path: str, data: bytes, timeout_s: float = 30.0) -> None:
        self.sidecar.request(
            "writeFile", {"sandbox": self.id, "path": path, "base64": base64.b64encode(data).decode()}, timeout_s
        )

    def read_file(self, path: str, timeout_s: float = 30.0, *, max_bytes: int) -> bytes:
        reply = self.sidecar.request(
            "readFile", {"sandbox": self.id, "path": path, "maxBytes": int(max_bytes)}, timeout_s
        )
        data = base64.b64decode(str(reply["base64"]), validate=True)
        if len(data) > max_bytes:  # the sidecar is confined but not trusted
            raise SandboxError(f"{path} is over the {max_bytes}-byte limit", code="file-too-large")
        return data

    def write_budget_exceeded(self) -> dict[str, Any] | None:
        """The host file on which this sandbox's PHP hit the write budget (``node/writeguard.mjs``), or None."""
        reply = self.sidecar.request("writeBudget", {"sandbox": self.id}, 30.0)
        if not isinstance(reply, dict) or reply.get("exceeded") is not True:
            return None
        return {"path": str(reply.get("path") or ""), "budgetBytes": int(reply.get("budget") or 0)}

    def abort(self, reason: str) -> None:
        """Kill the sidecar's process group: a running request fails at once with ``reason``. The sidecar is
        this sandbox's alone unless another sandbox shares its policy and binds; that one then fails too."""
        self.sidecar.kill(reason)

    def stop(self) -> list[Path]:
        """Stop this sandbox in the sidecar (its PHP worker ends: nothing writes to its folders any more)
        and return those folders, which the caller removes (``RunSession.close`` hands them to the
        detached reaper, runtime/reaper.py). A second call returns nothing. If the sidecar does not answer,
        it is killed (``Sidecar.request``), so either way no PHP of this sandbox is left running."""
        if self._disposed:
            return []
        self._disposed = True
        self.sidecar.live_sandboxes -= 1
        self.sidecar.last_used = time.monotonic()
        try:
            if self.sidecar.alive:
                self.sidecar.request("dispose", {"sandbox": self.id}, 30.0)
        except SandboxError:
            pass
        finally:
            self.sidecar.on_progress(self.id, None)
            callbacks, self.on_stopped = self.on_stopped, []
            for callback in callbacks:
                callback()
        return [self.work_dir, readonly_dir(self.work_dir)]

    def dispose(self) -> None:
        """Stop the sandbox and remove its folders before returning."""
        for folder in self.stop():
            remove_tree(folder)


def _check_host_uid(sidecar: Sidecar, spec: SandboxSpec) -> None:
    """The sidecar is the one whose uid the run handed its ``:live`` folders to (another one, started since
    the first was closed, could not write them)."""
    if spec.host_id is not None and host_uid(sidecar.host_id) != spec.host_id.uid:
        raise SandboxError(
            "The Playground sidecar the live folders were handed to has been replaced; run again",
            code="sidecar-replaced",
        )


def _check_visible(sidecar: Sidecar, mounts: list[dict[str, str]], sandboxes_root: Path) -> None:
    """Fail closed when a mount's host folder is not among what the confined sidecar sees."""
    if not sidecar.confined:
        return
    for mount in mounts:
        if not covered(mount["hostPath"], sandboxes_root, sidecar.binds, writable=False):
            raise SandboxError(
                f"Host folder {mount['hostPath']} is not visible to the confined sidecar",
                code="mount-not-visible",
                details={"vfsPath": mount["vfsPath"]},
            )


class PlaygroundBackend:
    name = "wordpress-playground"

    def __init__(self, settings: CodeboxSettings | None = None) -> None:
        self.settings = settings or get_settings()

    def prepare(self, spec: SandboxSpec) -> None:
        """Start the sidecar in the background while the caller does its own preparation."""
        self._sidecar_future(spec)

    def prewarm(self, spec: SandboxSpec) -> bool:
        """Before any boot: start the sidecar and, where spares are wanted, boot a spare for ``spec``'s
        WordPress/PHP/network policy in the background, so the first run starts warm. Never blocks;
        returns whether a spare was started."""
        if spec.php not in SUPPORTED_PHP or not spares_wanted(
            self.settings.spare_sandboxes, _boots_in_process, _spares_override
        ):
            return False
        build = resolve_build(spec.wp)
        key = _spare_key(build, spec, self._binds(spec), self.settings)
        with _spares_lock:
            if key in _spares:
                return False
        self._sidecar_future(spec)
        self._refill(key, spec, build)
        return True

    def host_id_for(self, spec: SandboxSpec) -> SandboxId | None:
        """As root: the host uid ``spec``'s sandbox will run as (its sidecar's, started now if need be), held
        for the caller until it releases it: the run hands its ``:live`` folders to it before the boot."""
        try:
            sidecar = self._sidecar_future(spec).result(timeout=spec.boot_timeout_s)
        except FutureTimeout:
            raise SandboxError("The Playground sidecar did not start", code="sidecar-start-timeout") from None
        return sidecar.host_id.share() if sidecar.host_id is not None else None

    def _binds(self, spec: SandboxSpec) -> tuple[Bind, ...]:
        return spec_binds(spec, self.settings.home / "sandboxes")

    def _sidecar_future(self, spec: SandboxSpec, binds: tuple[Bind, ...] | None = None) -> Future[Sidecar]:
        if binds is None:
            binds = self._binds(spec)
        key = sidecar_key(spec.policy, binds, self.settings)
        with _sidecars_lock:
            existing = _sidecars.get(key)
            if existing is not None and existing.alive:
                done: Future[Sidecar] = Future()
                done.set_result(existing)
                return done
            pending = _starting.get(key)
            if pending is not None and not pending.done():
                return pending
            future = _starter.submit(get_sidecar, self.settings, spec.policy, binds)
            _starting[key] = future
            return future

    def boot(self, spec: SandboxSpec, on_progress: ProgressCallback | None = None) -> PlaygroundSandbox:
        def report(phase: str, data: dict[str, Any] | None = None) -> None:
            if on_progress:
                on_progress(phase, data or {})

        if spec.php not in SUPPORTED_PHP:
            raise BadInputError(
                f"PHP {spec.php} is not available; choose one of {', '.join(SUPPORTED_PHP)}",
                code="unknown-php-version",
                field="php",
            )
        build = resolve_build(spec.wp)
        global _boots_in_process
        _boots_in_process += 1
        started = time.monotonic()
        self._sidecar_future(spec)  # node starts while the site directory is prepared
        report("resolving-wordpress", {"version": build.version})
        golden = ensure_golden_site(build, self.settings.golden_dir)
        spare_key = _spare_key(build, spec, self._binds(spec), self.settings)
        poolable = (
            spec.preview_port is None and spec.preview_bind is None and spec.blueprint is None and spec.site_url is None
        )
        if poolable:
            with _spares_lock:
                pending = _spares.pop(spare_key, None)
            if pending is not None:
                try:
                    spare = pending.result(timeout=spec.boot_timeout_s)
                except BaseException:
                    spare = None
                if spare is not None and spare.sidecar.alive:
                    report("using-prebooted-sandbox", {"sandbox": spare.id})
                    try:
                        self._attach_mounts(spare, spec, report)
                    except BaseException:
                        spare.dispose()
                        raise
                    # the next spare boots once this run's sandbox is stopped, not during the run: on
                    # two cores a background boot slowed the run that took the spare below a fresh one
                    spare.on_stopped.append(lambda: self._refill(spare_key, spec, build))
                    return spare
        warm = spec.warm or spec.preview_port is not None
        sandbox = self._boot_fresh(spec, build, golden, report, started, warm=warm)
        if poolable:
            self._refill(spare_key, spec, build, spare=False)
            sandbox.on_stopped.append(lambda: self._refill(spare_key, spec, build, pool=False))
        return sandbox

    def _refill(
        self, key: str, spec: SandboxSpec, build: WordPressBuild, *, spare: bool = True, pool: bool = True
    ) -> None:
        """Background work for the next sandbox: the opcache seed and prepared site dirs (``pool``), a
        spare (``spare``, where spares are wanted)."""
        bare = SandboxSpec(mounts=[], policy=spec.policy, wp=spec.wp, php=spec.php, boot_timeout_s=spec.boot_timeout_s)
        future: Future[PlaygroundSandbox] | None = None
        if spare and spares_wanted(self.settings.spare_sandboxes, _boots_in_process, _spares_override):
            with _spares_lock:
                if key not in _spares:
                    future = Future()
                    _spares[key] = future
        if future is None and not pool:
            return
        golden_root = self.settings.golden_dir
        binds = self._binds(spec)  # the spare lives in the sidecar that sees spec's folders

        def background() -> None:
            try:
                golden = ensure_golden_site(build, golden_root)
                needs_seed = opcache_seed(build, spec.php, golden_root) is None
                if future is not None:
                    # a spare is mount-less and warmed before anyone uses it: it can make the seed
                    future.set_result(
                        self._boot_fresh(
                            bare, build, golden, lambda *_: None, time.monotonic(), warm=True, seed=True, binds=binds
                        )
                    )
                elif needs_seed and pool:
                    self._boot_fresh(
                        bare, build, golden, lambda *_: None, time.monotonic(), warm=True, seed=True, binds=binds
                    ).dispose()
                if pool:  # the copies are made by a detached process: this process's exit never waits for them
                    start_pool_worker(build, spec.php, golden_root, golden)
            except BaseException as error:
                if future is not None and not future.done():
                    future.set_exception(error)

        # Not a daemon: a short-lived process waits for a half-made copy instead of abandoning it.
        thread = threading.Thread(target=background, name="codebox-sandbox-refill", daemon=future is not None)
        if not thread.daemon:
            exit_waits_for(thread)
        thread.start()

    def _attach_mounts(self, sandbox: PlaygroundSandbox, spec: SandboxSpec, report: ProgressCallback) -> None:
        mounts = sandbox_mounts(spec, sandbox.work_dir, report)
        _check_host_uid(sandbox.sidecar, spec)
        hand_over_folders(sandbox_written(mounts, sandbox.work_dir), host_uid(sandbox.sidecar.host_id))
        _check_visible(sandbox.sidecar, mounts, sandbox.work_dir.parent)
        if mounts:
            sandbox.sidecar.request("mount", {"sandbox": sandbox.id, "mounts": mounts}, 30.0)

    def _boot_fresh(
        self,
        spec: SandboxSpec,
        build: WordPressBuild,
        golden: Path,
        report: Callable[[str, dict[str, Any] | None], None],
        started: float,
        *,
        warm: bool = False,
        seed: bool = False,
        binds: tuple[Bind, ...] | None = None,
    ) -> PlaygroundSandbox:
        sandboxes_root = self.settings.home / "sandboxes"
        sandboxes_root.mkdir(parents=True, exist_ok=True)
        sweep_abandoned_once(sandboxes_root)
        sandbox_id = "sandbox-" + secrets.token_hex(6)
        work_dir = sandboxes_root / sandbox_id
        golden_root = self.settings.golden_dir
        sidecar_future = self._sidecar_future(spec, binds)
        try:
            if take_prepared_site(build, spec.php, golden_root, work_dir) or (
                _wait_for_preparation(build, spec.php, golden_root, 30.0)
                and take_prepared_site(build, spec.php, golden_root, work_dir)
            ):
                report("using-prepared-site", None)
            else:
                report("copying-site", None)
                make_sandbox_dir(build, spec.php, golden_root, golden, work_dir)
            (work_dir / OWNER_FILE).write_text(str(os.getpid()), encoding="ascii")
            readonly_dir(work_dir).mkdir(parents=True, exist_ok=True)
            (readonly_dir(work_dir) / OWNER_FILE).write_text(str(os.getpid()), encoding="ascii")
            site = work_dir / "wordpress"
            mounts: list[dict[str, str]] = []
            opcache = work_dir / "opcache"
            if seed:
                opcache.mkdir(exist_ok=True)
            if opcache.is_dir():  # this sandbox's private copy of the opcache seed
                mounts.append({"hostPath": str(opcache), "vfsPath": "/internal/shared/opcache"})
            mounts += sandbox_mounts(spec, work_dir, report)
            remaining = max(1.0, spec.boot_timeout_s - (time.monotonic() - started))
            try:
                sidecar = sidecar_future.result(timeout=remaining)
            except FutureTimeout:
                raise SandboxError("The Playground sidecar did not start", code="sidecar-start-timeout") from None
            _check_host_uid(sidecar, spec)
            hand_over_folders([site, *sandbox_written(mounts, work_dir)], host_uid(sidecar.host_id))  # its uid's
            _check_visible(sidecar, mounts, sandboxes_root)
            sidecar.on_progress(sandbox_id, lambda phase, data: report(phase, data))
            define_bool: dict[str, bool] = {"DISABLE_WP_CRON": True}
            if spec.policy.network_denied:
                define_bool["WP_HTTP_BLOCK_EXTERNAL"] = True
            params = {
                "sandbox": sandbox_id,
                "php": spec.php,
                "wp": build.playground_url,
                "mountsBeforeInstall": [{"hostPath": str(site), "vfsPath": "/wordpress"}],
                "mounts": mounts,
                "defineBool": define_bool,
                "warm": warm,
                "port": spec.preview_port or 0,
                "bind": spec.preview_bind or self.settings.preview_bind,
            }
            if spec.site_url is not None:
                params["siteUrl"] = spec.site_url
            remaining = max(1.0, spec.boot_timeout_s - (time.monotonic() - started))
            result = sidecar.request("boot", params, remaining)
            if seed and not spec.mounts and not spec.extra_mounts and warm:
                # Only Playground's boot and `require wp-load.php` have run here: no user code yet.
                save_opcache_seed(opcache, build, spec.php, golden_root)
        except BaseException:
            remove_tree(work_dir)
            remove_tree(readonly_dir(work_dir))
            raise
        return PlaygroundSandbox(
            sidecar, sandbox_id, work_dir, str(result["serverUrl"]), build.version, spec.php, golden
        )
