"""A browser probe's named checkpoints (``checkpoint=NAME[@WAIT]``, docs/browser.md "Named checkpoints"): their
form, checked before anything boots (lifecycle/request.py, recipes). Apart from the probe (browser/probe.py) so
that checking a run's request loads none of the browser machinery."""

from __future__ import annotations

import re
from dataclasses import dataclass

from codebox_tui.durations import parse_duration
from codebox_tui.errors import BadInputError

WAIT_STATES = ("domcontentloaded", "load", "networkidle")
# The moments a probe records by itself (checkpoints.jsonl); a named checkpoint takes another name.
AUTOMATIC_CHECKPOINTS = (*WAIT_STATES, "selector", "settled", "captured")
CHECKPOINT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MAX_NAMED_CHECKPOINTS = 20


@dataclass(frozen=True)
class NamedCheckpoint:
    """``checkpoint=NAME[@WAIT]``: after the page's own wait, wait for ``selector`` to be visible or ``settle_s``
    seconds (neither: at once), then record the moment with its own screenshot, metrics and memory."""

    name: str
    wait: str | None = None
    selector: str | None = None
    settle_s: float = 0.0


def parse_checkpoints(values: list[str]) -> list[NamedCheckpoint]:
    """Each ``NAME``, ``NAME@selector:<css>`` or ``NAME@<duration>``, in order; bad input names ``checkpoint``."""
    if len(values) > MAX_NAMED_CHECKPOINTS:
        raise BadInputError(
            f"checkpoint is given {len(values)} times; at most {MAX_NAMED_CHECKPOINTS}",
            code="invalid-arg",
            field="checkpoint",
        )
    out: list[NamedCheckpoint] = []
    for value in values:
        name, at, wait = value.partition("@")
        if not CHECKPOINT_NAME.match(name) or name in AUTOMATIC_CHECKPOINTS or name in [c.name for c in out]:
            raise BadInputError(
                f"checkpoint {value!r}: expected NAME, NAME@selector:<css> or NAME@<duration> with a unique NAME "
                "of letters, digits, '.', '_' or '-' (not one the probe records itself: "
                f"{', '.join(AUTOMATIC_CHECKPOINTS)})",
                code="invalid-arg",
                field="checkpoint",
            )
        if not at:
            out.append(NamedCheckpoint(name))
        elif wait.startswith("selector:") and wait[len("selector:") :].strip():
            out.append(NamedCheckpoint(name, wait, selector=wait[len("selector:") :]))
        elif wait[:1].isdigit():
            out.append(NamedCheckpoint(name, wait, settle_s=parse_duration(wait, "checkpoint")))
        else:
            raise BadInputError(
                f"checkpoint {value!r}: after '@' expected selector:<css> or a duration like 500ms",
                code="invalid-arg",
                field="checkpoint",
            )
    return out
