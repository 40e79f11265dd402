"""The batch runner on Ray (docs/scale-out.md): every attempt of every item is one Ray task declaring CPU and
memory, so Ray places it on a worker that can hold one more sandbox; no scheduler or worker pool of ours.

The runner keeps at most ``concurrency`` items in flight (``ray.wait``), times each attempt out from the
moment its worker reports it started (``ray.cancel(force=True)`` kills that worker and its sandbox),
submits a new attempt only after an infrastructure failure (the worker died, the sandbox did not boot),
cancels everything on Ctrl-C or :meth:`RunControl.cancel`, and brings every bundle back here: unpacked
under the caller's artifacts root, verified (fails closed: an invalid bundle is deleted and the item
fails), then recorded in the store with the batch, so the inbox groups them.

A local Ray instance (the default) is private to this process: sized to the machine, no dashboard, no
usage statistics, token authentication with a token made for it, and torn down at the end.
"""

from __future__ import annotations

import collections
import logging
import os
import re
import secrets
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codebox_tui.batch.loopback import enter_private_network
from codebox_tui.batch.model import BatchItem
from codebox_tui.batch.transfer import TransferError, unpack
from codebox_tui.batch.worker import run_item
from codebox_tui.bundle.verify import verify_bundle
from codebox_tui.contracts.common import new_id
from codebox_tui.errors import BadInputError
from codebox_tui.lifecycle import RunControl
from codebox_tui.settings import ensure_artifacts_dir, get_settings
from store.batches import create_batch, finish_batch, update_item
from store.db import Store
from store.inbox import record_run

BATCH_SCHEMA = "codebox/batch/v1"
RUNTIME_ID_RE = re.compile(r"^runtime-[a-z0-9]{1,20}-[a-z0-9]{1,20}$")
FINAL_STATES = ("completed", "failed", "timed-out", "cancelled")
POLL_S = 0.25
# what a worker passes on to its runs: Codebox's settings and the WordPress test tooling's two names
FORWARDED_ENV = ("WP_TESTS_DIR", "WP_TESTS_PHPUNIT_POLYFILLS_PATH")

_local_started = False  # this process started the Ray instance it is connected to


@dataclass
class ItemState:
    """One item as the batch sees it (the progress table's line)."""

    item: BatchItem
    position: int
    state: str = "queued"  # queued, running, retrying, completed, failed, timed-out, cancelled
    attempts: int = 0
    verdict: str = ""
    success: bool = False
    phase: str = ""
    pid: int | None = None
    node: str | None = None
    run_id: str | None = None
    bundle_id: str | None = None
    bundle_key: int | None = None
    bundle_dir: str | None = None
    error: dict[str, Any] | None = None
    retried: list[str] = field(default_factory=list)  # why each earlier attempt was retried
    summary: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    attempt_started: float | None = None
    timed_out: bool = False

    @property
    def done(self) -> bool:
        return self.state in FINAL_STATES

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.item.id,
            "kind": self.item.kind,
            "label": self.item.label,
            "line": self.item.line,
            "state": self.state,
            "attempts": self.attempts,
            "success": self.success,
            "verdict": self.verdict,
            "runId": self.run_id,
            "bundleId": self.bundle_id,
            "bundleKey": self.bundle_key,
            "bundleDir": self.bundle_dir,
            "error": self.error,
            "retried": self.retried,
            "summary": self.summary,
            "warnings": self.warnings,
            "sandboxSessionId": self.item.sandbox_session_id,
        }


@dataclass
class BatchOutcome:
    batch_id: str
    items: list[ItemState]
    ray_address: str
    seconds: float
    interrupted: bool = False

    @property
    def success(self) -> bool:
        return not self.interrupted and all(s.state == "completed" and s.success for s in self.items)

    def to_dict(self) -> dict[str, Any]:
        counts = collections.Counter(s.state for s in self.items)
        return {
            "schema": BATCH_SCHEMA,
            "batchId": self.batch_id,
            "success": self.success,
            "interrupted": self.interrupted,
            "rayAddress": self.ray_address,
            "seconds": round(self.seconds, 3),
            "counts": dict(sorted(counts.items())),
            "items": [s.to_dict() for s in self.items],
        }


# -- Ray ----------------------------------------------------------------------------------------------------
def start_local_ray(num_cpus: int | None = None, *, loopback_only: bool = True) -> str:
    """Start this process's private local Ray instance (``num_cpus`` default: the machine's CPUs): no dashboard,
    no usage statistics, token authentication with a fresh token (never written to disk), and — unless
    ``loopback_only`` is False — inside a network with only ``lo`` (batch/loopback.py), which needs a
    single-threaded process. Returns its address."""
    global _local_started
    if loopback_only:
        enter_private_network()
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ["RAY_AUTH_MODE"] = "token"
    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    import ray  # noqa: PLC0415 - Ray loads only when a batch runs
    from ray._raylet import Config  # type: ignore[attr-defined]  # noqa: PLC0415 - Ray, as above

    Config.initialize("")  # Ray reads RAY_AUTH_MODE into its config when first imported: read it again

    cpus = num_cpus or os.cpu_count() or 1
    context = ray.init(
        address="local",
        num_cpus=cpus,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.ERROR,
        configure_logging=True,
        namespace="codebox",
        object_store_memory=512 * 1024 * 1024,
    )
    _local_started = True
    info: dict[str, Any] = getattr(context, "address_info", {})
    return str(info.get("gcs_address") or "local")


def connect_ray(address: str) -> str:
    """Connect to a running Ray cluster (``--ray-address``); its workers need Codebox installed."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray  # noqa: PLC0415 - Ray loads only when a batch runs

    try:
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.ERROR,
            namespace="codebox",
        )
    except (ConnectionError, RuntimeError, ValueError) as error:
        raise BadInputError(
            f"cannot connect to the Ray cluster at {address}: {error}", code="ray-unreachable", field="--ray-address"
        ) from None
    return address


def stop_ray() -> None:
    global _local_started
    import ray  # noqa: PLC0415 - Ray loads only when a batch runs

    ray.shutdown()
    _local_started = False


@contextmanager
def ray_instance(address: str | None = None) -> Iterator[str]:
    """Use the Ray instance this process is already connected to, else connect to ``address`` or start a local
    one; what this call started it also stops."""
    ray = sys.modules.get("ray")  # not imported here: start_local_ray sets Ray's environment first
    if ray is not None and ray.is_initialized():
        yield str(ray.get_runtime_context().gcs_address)
        return
    started = connect_ray(address) if address else start_local_ray()
    try:
        yield started
    finally:
        stop_ray()


def worker_env() -> dict[str, str]:
    """The environment of every task: runs are not recorded on the worker (the caller records them). On this
    process's own local instance the workers share the machine, so they get its Codebox settings too."""
    env = {"CODEBOX_RECORD_RUNS": "false"}
    if _local_started:
        env.update({k: v for k, v in os.environ.items() if k.startswith("CODEBOX_") or k in FORWARDED_ENV})
        env["CODEBOX_HOME"] = str(get_settings().home)
        env.setdefault("CODEBOX_SPARE_SANDBOXES", "off")
        env["CODEBOX_RECORD_RUNS"] = "false"
    return env


class _Board:
    """The progress board (a Ray actor): tasks report their phases, the runner drains them."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int, dict[str, Any]]] = []

    def report(self, item_id: str, attempt: int, data: dict[str, Any]) -> None:
        self.events.append((item_id, attempt, data))

    def drain(self) -> list[tuple[str, int, dict[str, Any]]]:
        out, self.events = self.events, []
        return out


# -- the runner ---------------------------------------------------------------------------------------------
class _Batch:
    def __init__(
        self,
        items: list[BatchItem],
        *,
        batch_id: str,
        kind: str,
        source: str,
        root: Path,
        concurrency: int | None,
        timeout_s: float | None,
        retries: int,
        on_update: Callable[[ItemState], None] | None,
        control: RunControl,
        store: Any,
    ) -> None:
        self.states = [ItemState(item, i) for i, item in enumerate(items)]
        self.by_id = {s.item.id: s for s in self.states}
        self.batch_id, self.kind, self.source, self.root = batch_id, kind, source, root
        self.concurrency, self.timeout_s, self.retries = concurrency, timeout_s, retries
        self.on_update, self.control, self.store = on_update, control, store

    def changed(self, state: ItemState, *, persist: bool = True) -> None:
        if persist:
            error = None if state.error is None else str(state.error.get("message") or state.error)
            update_item(
                self.store,
                self.batch_id,
                state.item.id,
                state=state.state,
                attempts=state.attempts,
                verdict=state.verdict,
                run_id=state.run_id,
                bundle_key=state.bundle_key,
                error=error,
                phase="" if state.done else state.phase,
            )
        if self.on_update is not None:
            self.on_update(state)

    def run(self) -> bool:
        """Run every item; True when interrupted (Ctrl-C or the control was cancelled)."""
        import ray  # noqa: PLC0415 - Ray loads only when a batch runs
        from ray import exceptions as rex  # noqa: PLC0415 - Ray, as above

        settings = get_settings()
        task = ray.remote(run_item).options(
            num_cpus=settings.batch_item_cpus,
            memory=settings.batch_item_memory_mb * 1024 * 1024,
            max_retries=0,
            runtime_env={"env_vars": worker_env()},
            name="codebox-batch-item",
        )
        board: Any = ray.remote(_Board).options(num_cpus=0).remote()
        cpus = float(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]
        limit = self.concurrency or max(1, int(cpus // settings.batch_item_cpus))
        queue = collections.deque(self.states)
        running: dict[Any, ItemState] = {}
        interrupted = False
        try:
            while queue or running:
                if self.control.cancelled:
                    interrupted = True
                    break
                while queue and len(running) < limit:
                    state = queue.popleft()
                    state.attempts += 1
                    state.state, state.phase, state.attempt_started = "running", "submitted", None
                    state.timed_out = False
                    running[task.remote(state.item.kind, state.item.request, state.item.id, state.attempts, board)] = (
                        state
                    )
                    self.changed(state)
                ready, _ = ray.wait(list(running), num_returns=1, timeout=POLL_S)
                self._drain(ray.get(board.drain.remote()))
                for ref in ready:
                    state = running.pop(ref)
                    if self._finish(ref, state, ray, rex):
                        queue.appendleft(state)  # the retry goes next
                self._time_out(running, ray)
        except KeyboardInterrupt:
            interrupted = True
        if interrupted:
            for ref, state in running.items():
                ray.cancel(ref, force=True)
                state.state, state.error = "cancelled", {"code": "cancelled", "message": "the batch was cancelled"}
                self.changed(state)
            for state in queue:
                state.state = "cancelled"
                self.changed(state)
        return interrupted

    def _drain(self, events: list[tuple[str, int, dict[str, Any]]]) -> None:
        for item_id, attempt, data in events:
            state = self.by_id.get(item_id)
            if state is None or attempt != state.attempts or state.done:
                continue
            if "pid" in data:
                state.pid, state.node = data.get("pid"), data.get("node")
                state.attempt_started = time.monotonic()
            phase = str(data.get("phase") or state.phase)
            moved, state.phase = phase != state.phase, phase
            self.changed(state, persist=moved)  # the store carries the phase too: the TUI's batch screen reads it

    def _time_out(self, running: dict[Any, ItemState], ray: Any) -> None:
        if self.timeout_s is None:
            return
        now = time.monotonic()
        for ref, state in running.items():
            started = state.attempt_started
            if started is not None and not state.timed_out and now - started > self.timeout_s:
                state.timed_out = True
                state.phase = "timed out; stopping"
                ray.cancel(ref, force=True)  # kills that worker process and, with it, its sandbox
                self.changed(state, persist=False)

    def _finish(self, ref: Any, state: ItemState, ray: Any, rex: Any) -> bool:
        """Settle one finished attempt; True when it is to be retried."""
        try:
            result = ray.get(ref)
        except rex.TaskCancelledError:
            if state.timed_out:
                state.state = "timed-out"
                state.error = {"code": "item-timeout", "message": f"the item ran longer than {self.timeout_s:g} s"}
            else:
                state.state, state.error = "cancelled", {"code": "cancelled", "message": "the task was cancelled"}
            self.changed(state)
            return False
        except (
            rex.WorkerCrashedError,
            rex.NodeDiedError,
            rex.LocalRayletDiedError,
            rex.ObjectLostError,
            rex.RaySystemError,
            rex.OutOfMemoryError,
        ) as error:
            if state.timed_out:
                state.state = "timed-out"
                state.error = {"code": "item-timeout", "message": f"the item ran longer than {self.timeout_s:g} s"}
                self.changed(state)
                return False
            return self._infra(state, f"the worker died ({type(error).__name__})")
        except rex.RayTaskError as error:
            state.state = "failed"
            state.error = {"code": "worker-error", "message": str(error).strip().splitlines()[-1][:500]}
            self.changed(state)
            return False
        if result.get("infra") and state.attempts <= self.retries:
            return self._infra(state, str(result["infra"]))
        state.verdict, state.success = str(result.get("verdict") or ""), bool(result.get("success"))
        state.summary, state.error = dict(result.get("summary") or {}), result.get("error")
        if result.get("infra"):
            state.error = {"code": "infrastructure-failure", "message": str(result["infra"])}
        if result.get("bundleTar"):
            self._receive(state, result)
        state.state = "completed" if state.error is None else "failed"
        self.changed(state)
        return False

    def _infra(self, state: ItemState, reason: str) -> bool:
        state.retried.append(f"attempt {state.attempts}: {reason}")
        if state.attempts <= self.retries:
            state.state, state.phase, state.pid = "retrying", reason[:120], None
            self.changed(state)
            return True
        state.state = "failed"
        state.error = {"code": "infrastructure-failure", "message": f"{reason}; no retries left"}
        self.changed(state)
        return False

    def _receive(self, state: ItemState, result: dict[str, Any]) -> None:
        """Unpack the bundle under the artifacts root, verify it (fails closed) and record it in the store."""
        run_id = str(result.get("runtimeId") or "")
        if not RUNTIME_ID_RE.match(run_id):
            state.error = {"code": "bundle-refused", "message": f"the worker named its run {run_id[:80]!r}"}
            return
        dest = self.root / run_id
        try:
            unpack(result["bundleTar"], dest)
        except TransferError as error:
            state.error = {"code": "bundle-refused", "message": error.message}
            return
        verification = verify_bundle(dest)
        if not verification.valid:
            codes = ", ".join(sorted({v.code for v in verification.violations}))
            shutil.rmtree(dest, ignore_errors=True)
            state.error = {
                "code": "bundle-verification-failed",
                "message": f"the bundle from the worker failed verification ({codes}); it was deleted",
            }
            return
        metadata = {
            "flow": state.item.kind,
            "batch": self.batch_id,
            "batchItem": state.item.id,
            "attempt": state.attempts,
            "worker": {"node": result.get("node"), "pid": result.get("pid")},
        }
        record = record_run(
            run_id=run_id,
            run_dir=dest,
            status="completed" if result.get("success") else "failed",
            bundle_dir=dest,
            metadata=metadata,
            sandbox_session_id=state.item.sandbox_session_id,
            started_at=result.get("startedAt"),
            store=self.store,
        )
        state.run_id, state.bundle_dir = run_id, str(dest)
        if record is not None:
            state.bundle_id, state.bundle_key = record.bundle_id, record.key


def run_batch(
    items: list[BatchItem],
    *,
    concurrency: int | None = None,
    timeout_s: float | None = None,
    retries: int = 1,
    ray_address: str | None = None,
    artifacts_root: Path | None = None,
    on_update: Callable[[ItemState], None] | None = None,
    control: RunControl | None = None,
    batch_id: str | None = None,
    kind: str = "batch",
    source: str = "",
    metadata: dict[str, Any] | None = None,
    on_start: Callable[[str, str], None] | None = None,
) -> BatchOutcome:
    """Run ``items`` on Ray (see the module docstring) and record the batch; ``on_update(item state)`` is called
    on every change, ``on_start(batch id, ray address)`` once Ray is up. ``kind`` is ``batch`` or ``fan-out``
    (``codebox agent-task --fan-out N``)."""
    if not items:
        raise BadInputError("a batch needs at least one item", code="empty-batch", field="FILE")
    if concurrency is not None and concurrency < 1:
        raise BadInputError("--concurrency must be at least 1", code="invalid-arg", field="--concurrency")
    if retries < 0:
        raise BadInputError("--retries must be 0 or more", code="invalid-arg", field="--retries")
    if timeout_s is not None and timeout_s <= 0:
        raise BadInputError("--timeout must be more than 0", code="invalid-arg", field="--timeout")
    root = ensure_artifacts_dir(Path(artifacts_root) if artifacts_root else get_settings().artifacts_dir).resolve()
    batch_id = batch_id or new_id("batch")
    started = time.monotonic()
    with Store.open() as store:
        create_batch(
            store, batch_id, kind=kind, source=source, items=[(i.id, i.kind, i.label) for i in items], metadata=metadata
        )
        batch = _Batch(
            items,
            batch_id=batch_id,
            kind=kind,
            source=source,
            root=root,
            concurrency=concurrency,
            timeout_s=timeout_s,
            retries=retries,
            on_update=on_update,
            control=control or RunControl(),
            store=store,
        )
        interrupted = False
        used = ray_address or "local"
        try:
            with ray_instance(ray_address) as address:
                used = address
                if on_start is not None:
                    on_start(batch_id, address)
                interrupted = batch.run()
        finally:
            outcome = BatchOutcome(batch_id, batch.states, used, time.monotonic() - started, interrupted)
            finish_batch(
                store,
                batch_id,
                "cancelled"
                if interrupted
                else ("completed" if all(s.state == "completed" for s in batch.states) else "failed"),
            )
    return outcome
