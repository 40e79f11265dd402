"""The Review screen of a bundle whose review.json and metadata.json have fields of the wrong type (issue #13):
the bundle opens, what reads is shown, and the Provenance tab lists each unread field. A real captured bundle,
its review and metadata then rewritten (so it also fails verification, as a tampered bundle would)."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import Static

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.review import ReviewScreen


def _break_types(bundle: Path) -> dict[str, int]:
    review = json.loads((bundle / "files/review.json").read_text())
    stats: dict[str, int] = review["stats"]
    review |= {
        "summary": ["not", "text"],
        "stats": {**review["stats"], "modified": "one"},
        "riskFlags": ["binary-files", 3],
        "evidence": 5,
    }
    (bundle / "files/review.json").write_text(json.dumps(review))
    metadata = json.loads((bundle / "metadata.json").read_text())
    metadata["policy"] = "deny everything"
    (bundle / "metadata.json").write_text(json.dumps(metadata))
    return stats


def _text(screen: ReviewScreen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


async def test_wrong_types_open_and_are_listed_on_the_provenance_tab(bundle_dir: Path) -> None:
    stats = _break_types(bundle_dir)
    assert stats["modified"] and stats["added"]
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        assert len(screen.bundle.changed_files) == stats["total"]  # the change itself is all there
        title = _text(screen, "#review-title")
        # the bad count reads as 0, the others as written
        assert "0 modified" in title and f"+{stats['added']} added" in title
        assert "1 risk:" in _text(screen, "#risks") and "binary-files" in _text(screen, "#risks")
        screen.query_one("#tabs").active = "tab-provenance"  # type: ignore[attr-defined]
        await pilot.pause()
        provenance = _text(screen, "#provenance")
        assert "Verified NO" in provenance
        assert "Unread (5): fields of the wrong type, shown as their default" in provenance
        for field in (
            "files/review.json: summary:",
            "files/review.json: stats.modified:",
            "files/review.json: riskFlags[1]:",
            "files/review.json: evidence:",
            "metadata.json: policy:",
        ):
            assert field in provenance, field
        assert "Policy {}" in provenance
