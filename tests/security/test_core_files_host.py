"""WordPress core is compared on the host, not by the sandbox (issue #25; docs/security.md, "Core files compared on
the host"). Through a real Playground sandbox and a whole run (RunService), the code under review:

- rewrites ``wp-includes/version.php`` in place with bytes of the same size and sets its mtime back;
- plants a new file in ``wp-admin``, deletes a root file, and replaces another core file by a link to a host file;

while the in-sandbox summary is forged to say nothing changed (the test hands the recorder the boot summary again,
as a sandbox that had beaten the probe would). The bundle's site-state diff must still carry a high
``core-file-changed`` flag per path, and the verdict must not be clean. Before the host check, the forged summary
made the run read clean."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.contracts.runtime import RuntimePolicy
from codebox_tui.contracts.site_state import SiteStateDiff, SiteStateSummary
from codebox_tui.lifecycle import site_state as recorder_module
from codebox_tui.lifecycle.request import CommandStep, RunRequest
from codebox_tui.lifecycle.service import RunService
from codebox_tui.lifecycle.site_state import unclean_risks
from codebox_tui.settings import get_settings

pytestmark = pytest.mark.playground

ATTACK = """
$f = ABSPATH . 'wp-includes/version.php';
$st = stat($f);
$data = file_get_contents($f);
$forged = str_replace('$wp_version = ', '$wp_versiox = ', $data);
file_put_contents($f, $forged);
touch($f, $st['mtime'], $st['atime']);
clearstatcache();
file_put_contents(ABSPATH . 'wp-admin/planted.php', '<?php // planted in core');
unlink(ABSPATH . 'wp-links-opml.php');
unlink(ABSPATH . 'wp-includes/class-wp-error.php');
symlink('/etc/passwd', ABSPATH . 'wp-includes/class-wp-error.php');
echo json_encode([strlen($data) === strlen($forged), filemtime($f) === $st['mtime']]);
"""


@pytest.fixture
def forged_summaries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every summary after the first is the first one again: the sandbox's word says nothing changed (whether the
    recorder takes it alone or with the wp-content listing, in one probe)."""
    real_summary, real_with_listing = recorder_module.take_summary, recorder_module.summary_and_listing
    first: list[SiteStateSummary] = []

    def forge(summary: SiteStateSummary) -> SiteStateSummary:
        if not first:
            first.append(summary)
            return summary
        return first[0].model_copy(update={"takenAt": summary.takenAt})

    def forged(sandbox: Any, **kwargs: Any) -> SiteStateSummary:
        return forge(real_summary(sandbox, **kwargs))

    def forged_with_listing(sandbox: Any, *args: Any, **kwargs: Any) -> tuple[SiteStateSummary, Any]:
        summary, listing = real_with_listing(sandbox, *args, **kwargs)
        return forge(summary), listing

    monkeypatch.setattr(recorder_module, "take_summary", forged)
    monkeypatch.setattr(recorder_module, "summary_and_listing", forged_with_listing)


def test_core_changes_are_found_on_the_host_though_the_summary_says_nothing_changed(
    tmp_path: Path, forged_summaries: None
) -> None:
    request = RunRequest(
        commands=[CommandStep("wordpress.run-php", [f"code={ATTACK}"])],
        policy=RuntimePolicy(commands=["wordpress.run-php"]),
        artifacts_root=tmp_path,
    )
    outcome = RunService(get_settings()).run(request)
    assert outcome.bundle_dir is not None, outcome.failure_text()
    files = outcome.bundle_dir / "files"
    stdout = (outcome.bundle_dir / "commands.jsonl").read_text(encoding="utf-8")
    assert "[true,true]" in stdout  # same size, mtime set back: only the host's ctime and bytes tell
    diff = SiteStateDiff.model_validate(json.loads((files / "site-state-diff.json").read_text(encoding="utf-8")))
    assert diff.controlFiles == []  # the forged summary saw nothing
    flagged = {(r.subject, r.severity) for r in diff.risks if r.code == "core-file-changed"}
    assert flagged == {
        ("/wordpress/wp-includes/version.php", "high"),
        ("/wordpress/wp-admin/planted.php", "high"),
        ("/wordpress/wp-links-opml.php", "high"),
        ("/wordpress/wp-includes/class-wp-error.php", "high"),
    }, diff.risks
    assert unclean_risks(diff) == ["core-file-changed"]
    review = json.loads((files / "review.json").read_text(encoding="utf-8"))
    assert "site-state:core-file-changed" in review["riskFlags"]
