"""Nothing to decide: the one rule for a run whose bundle is output only (docs/exec.md, "Nothing to decide").

A command line run with ``codebox exec`` (or the MCP ``execute`` tool) on a fresh sandbox that changed no
mounted file and left the site's database and control files as they were has produced only output. Its
bundle is recorded (the output is evidence) as ``store.db.OUTPUT_ONLY_STATUS``: listed, never awaiting a
decision. Everything here is host-side data (the host's capture of the mounts, the host's diff of two
site-state summaries); whatever cannot be shown to be unchanged keeps the bundle reviewable (fails closed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from codebox_tui.contracts.runtime import LIVE_MOUNT_KEY, MountSpec
from codebox_tui.contracts.site_state import SiteStateDiff

# The flows whose runs may be output only: the exec shell, from the CLI and from the MCP server, and a held
# preview (`codebox boot`, `codebox site open`) in which nothing was changed.
OUTPUT_ONLY_FLOWS = frozenset({"exec", "boot", "site-open"})


def nothing_to_decide(
    flow: str,
    mounts: Sequence[MountSpec],
    changed_files: Sequence[Any] | None,
    skipped: Sequence[Any] | None,
    site_state: SiteStateDiff | None,
) -> bool:
    """True when a run of ``flow`` asks for no decision: an exec flow, no ``:live`` mount (a live mount's writes
    reach the host folder at once, beside the capture), no changed file and no change the capture skipped
    (``skipped``: changes seen but not copied, e.g. past a size limit), and a site-state diff that was taken
    and is empty. No diff (site state off, a summary that failed, a crashed sandbox) is not "unchanged"."""
    live = any(m.metadata.get(LIVE_MOUNT_KEY) for m in mounts)
    return (
        flow in OUTPUT_ONLY_FLOWS
        and not live
        and not changed_files
        and not skipped
        and site_state is not None
        and site_state.empty
        and not site_state.risks
    )
