"""Batches and fan-outs of sandbox runs on Ray (docs/scale-out.md): the batch file model, the item kinds, the
transfer of inputs and bundles, the worker side of one item and the runner."""

from codebox_tui.batch.batchfile import parse_batch_file, parse_batch_text
from codebox_tui.batch.kinds import (
    KINDS,
    ItemKind,
    KindResult,
    agent_fan_out,
    fan_out_items,
    get_kind,
    item_from_json,
)
from codebox_tui.batch.model import BatchItem
from codebox_tui.batch.runner import (
    BATCH_SCHEMA,
    BatchOutcome,
    ItemState,
    ray_instance,
    run_batch,
    start_local_ray,
    stop_ray,
)

__all__ = [
    "BATCH_SCHEMA",
    "KINDS",
    "BatchItem",
    "BatchOutcome",
    "ItemKind",
    "ItemState",
    "KindResult",
    "agent_fan_out",
    "fan_out_items",
    "get_kind",
    "item_from_json",
    "parse_batch_file",
    "parse_batch_text",
    "ray_instance",
    "run_batch",
    "start_local_ray",
    "stop_ray",
]
