"""The one rule for an output-only run (codebox_tui/lifecycle/informational.py): pure logic, each condition
on its own; the real flows are in tests/e2e/test_exec_output_only.py and tests/security."""

from __future__ import annotations

from codebox_tui.contracts.runtime import LIVE_MOUNT_KEY, MountSpec
from codebox_tui.contracts.site_state import RiskFlag, SiteStateDiff
from codebox_tui.lifecycle.informational import nothing_to_decide

EMPTY = SiteStateDiff(before="t0", after="t1", empty=True)
CHANGED = SiteStateDiff(before="t0", after="t1", empty=False)
COPY = MountSpec(source="/tmp/p", target="/wordpress/wp-content/plugins/p")
LIVE = MountSpec(source="/tmp/p", target="/wordpress/wp-content/plugins/p", metadata={LIVE_MOUNT_KEY: True})


def test_an_exec_that_changed_nothing_has_nothing_to_decide() -> None:
    assert nothing_to_decide("exec", [COPY], [], [], EMPTY)


def test_anything_that_may_have_changed_keeps_the_bundle_reviewable() -> None:
    assert not nothing_to_decide("run", [], [], [], EMPTY)  # only the exec flows
    assert not nothing_to_decide("exec", [COPY], [{"path": "/x"}], [], EMPTY)  # a changed file
    assert not nothing_to_decide("exec", [COPY], [], [{"path": "/big"}], EMPTY)  # a change the capture skipped
    assert not nothing_to_decide("exec", [COPY], [], [], CHANGED)  # the site state changed
    assert not nothing_to_decide("exec", [COPY], [], [], None)  # no diff taken: not known to be unchanged
    assert not nothing_to_decide("exec", [LIVE], [], [], EMPTY)  # a live mount writes beside the capture
    risky = EMPTY.model_copy(
        update={"risks": [RiskFlag(code="summary-unavailable", severity="high", subject="after", message="m")]}
    )
    assert not nothing_to_decide("exec", [], [], [], risky)
