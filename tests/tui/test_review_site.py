"""The Review screen's Site tab and `codebox artifacts show` render a bundle's site-state diff
(docs/site-state.md): risks with their subjects, the changes per category, and sandbox-written names with
escape sequences shown as escapes, never sent to the terminal."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import TabbedContent
from typer.testing import CliRunner

from codebox_tui.app import CodeboxApp
from codebox_tui.bundle.verify import verify_bundle
from codebox_tui.cli import app as cli_app
from codebox_tui.contracts.canonical import pretty_json
from codebox_tui.contracts.site_state import (
    CronChange,
    OptionChange,
    RiskFlag,
    SiteStateDiff,
    TableChange,
    UserChange,
)
from codebox_tui.screens.review import ReviewScreen
from tests.factories.bundles import make_bundle, typical_change
from widgets.text_lines import TextLines

HOSTILE = "evil\x1b[2J\x1b]0;pwned\x07name"


def _diff() -> SiteStateDiff:
    return SiteStateDiff(
        before="2026-01-01T00:00:00Z",
        after="2026-01-01T00:00:01Z",
        empty=False,
        options=[
            OptionChange(name="site_state_demo_version", status="added", after="1.0.0"),
            OptionChange(name=HOSTILE, status="added", after="x\x1b[31mred"),
        ],
        tables=[TableChange(name="wp_site_state_demo_log", status="created", columnsAdded=["id", "message"])],
        users=[UserChange(id="2", login="site-state-demo-admin", status="added", capabilitiesAdded=["administrator"])],
        cron=[CronChange(hook="site_state_demo_ping", status="added", schedule="hourly", timestamp=1)],
        risks=[
            RiskFlag(
                code="new-administrator",
                severity="high",
                subject="site-state-demo-admin",
                message="a new administrator",
            ),
            RiskFlag(
                code="cron-event-added", severity="medium", subject="site_state_demo_ping", message="a new cron event"
            ),
        ],
    )


def _bundle(tmp_path: Path) -> Path:
    doc = _diff().model_dump(mode="json", by_alias=True, exclude_none=True)
    summary, _ = make_bundle(
        tmp_path, typical_change, evidence={"files/site-state-diff.json": ("site-state-diff", pretty_json(doc))}
    )
    assert verify_bundle(summary.path).valid
    return Path(summary.path)


async def test_site_tab_shows_the_diff_with_hostile_names_escaped(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    app = CodeboxApp(bundle)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
        tabs = app.screen.query_one("#tabs", TabbedContent)
        assert str(tabs.get_tab("tab-site").label) == "Site (2 risks)"  # the count where it cannot be missed
        tabs.active = "tab-site"
        await pilot.pause()
        view = app.screen.query_one("#site", TextLines)
        assert view.size.height > 0
        rendered = ["".join(seg.text for seg in view.render_line(y)) for y in range(view.size.height)]
    text = "\n".join(rendered)
    for expected in (
        "new-administrator",
        "site-state-demo-admin",
        "site_state_demo_ping",
        "wp_site_state_demo_log",
        "site_state_demo_version",
        "+administrator",
    ):
        assert expected in text
    assert text.index("new-administrator") < text.index("site_state_demo_version")  # risks first
    assert "\x1b" not in text and "\x07" not in text
    assert "evil\\x1b[2J\\x1b]0;pwned\\x07name" in text


def test_artifacts_show_prints_the_site_state_section_safely(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    out = CliRunner().invoke(cli_app, ["artifacts", "show", str(bundle)])
    assert out.exit_code == 0, out.output
    site = [line for line in out.output.splitlines() if line.startswith("site ")]
    assert any("new-administrator" in line and "site-state-demo-admin" in line for line in site)
    assert any("2 risks" in line and "1 tables" in line for line in site)
    assert "\x1b" not in out.output and "evil\\x1b[2J" in out.output
    shown = CliRunner().invoke(cli_app, ["artifacts", "show", str(bundle), "--json"])
    site_state = json.loads(shown.output)["siteState"]
    assert site_state["counts"]["options"] == 2 and site_state["counts"]["users"] == 1
    assert [r["code"] for r in site_state["risks"]] == ["new-administrator", "cron-event-added"]
