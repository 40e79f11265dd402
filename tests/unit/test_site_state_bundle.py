"""A bundle's files/site-state-diff.json is checked by the verifier against codebox/site-state-diff/v1, and a
malformed one is shown as unreadable rather than breaking `artifacts show` (docs/site-state.md)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from codebox_tui.bundle.reader import load_bundle
from codebox_tui.bundle.verify import verify_bundle
from codebox_tui.cli import app as cli_app
from codebox_tui.contracts.site_state import RiskFlag, SiteStateDiff
from codebox_tui.lifecycle.site_state import risk_flag_names
from tests.factories.bundles import make_bundle, typical_change


def _bundle(tmp_path: Path, doc: object) -> Path:
    summary, _ = make_bundle(
        tmp_path, typical_change, evidence={"files/site-state-diff.json": ("site-state-diff", json.dumps(doc))}
    )
    return Path(summary.path)


def test_a_diff_that_breaks_the_schema_is_a_violation_and_shown_as_unreadable(tmp_path: Path) -> None:
    bad = {
        "schema": "codebox/site-state-diff/v1",
        "before": "a",
        "after": "b",
        "empty": False,
        "risks": [{"code": "made-up", "severity": "high", "message": "m", "subject": "s"}],
    }
    bundle = _bundle(tmp_path, bad)
    result = verify_bundle(bundle)
    assert not result.valid
    assert [(v.code, v.path) for v in result.violations] == [
        ("malformed-reference", "files/site-state-diff.json:risks/0/code")
    ]
    loaded = load_bundle(bundle)
    assert loaded.site_state is None and loaded.site_state_problem
    out = CliRunner().invoke(cli_app, ["artifacts", "show", str(bundle)])
    assert out.exit_code == 0, out.output
    assert "site     unreadable:" in out.output


def test_a_valid_diff_verifies_and_loads(tmp_path: Path) -> None:
    doc = SiteStateDiff(before="a", after="b", empty=True).model_dump(mode="json", by_alias=True, exclude_none=True)
    bundle = _bundle(tmp_path, doc)
    assert verify_bundle(bundle).valid
    loaded = load_bundle(bundle)
    assert loaded.site_state is not None and loaded.site_state.empty


def test_each_risk_code_is_one_review_flag() -> None:
    diff = SiteStateDiff(
        before="a",
        after="b",
        empty=False,
        risks=[
            RiskFlag(code="capabilities-granted", severity="high", message="m", subject="u1"),
            RiskFlag(code="capabilities-granted", severity="medium", message="m", subject="u2"),
            RiskFlag(code="home-changed", severity="high", message="m", subject="home"),
        ],
    )
    assert risk_flag_names(diff) == ["site-state:capabilities-granted", "site-state:home-changed"]
