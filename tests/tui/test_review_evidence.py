"""Evidence tab: a PNG screenshot in the bundle is drawn inline (coloured half-blocks here; Sixel or
Kitty graphics on terminals that support them), and listed by path only when images are off."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.review import ReviewScreen
from codebox_tui.screenshots import build_demo_bundle
from codebox_tui.settings import reload_settings
from widgets.evidence_view import EvidenceView


async def _evidence(bundle: Path) -> tuple[list[Path], str]:
    app = CodeboxApp(bundle)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
        app.screen.query_one("#tabs").active = "tab-evidence"  # type: ignore[attr-defined]
        await pilot.pause()
        view = app.screen.query_one(EvidenceView)
        text = "\n".join(str(s.render()) for s in view.query(Static))
        return list(view.images_shown), text


async def test_png_screenshot_is_drawn_inline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEBOX_IMAGES", "halfcell")
    reload_settings()
    bundle = build_demo_bundle(tmp_path)
    shown, text = await _evidence(bundle)
    assert shown == [bundle / "files" / "browser" / "screenshot.png"]
    assert "files/browser/screenshot.png" in text


async def test_images_off_lists_paths_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEBOX_IMAGES", "off")
    reload_settings()
    bundle = build_demo_bundle(tmp_path)
    shown, text = await _evidence(bundle)
    assert shown == []
    assert "files/browser/screenshot.png" in text and "listed as paths" in text


async def test_unreadable_png_shows_a_message_not_a_traceback(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEBOX_IMAGES", "halfcell")
    reload_settings()
    bundle = build_demo_bundle(tmp_path)
    (bundle / "files" / "browser" / "screenshot.png").write_bytes(b"not a png")
    shown, text = await _evidence(bundle)
    assert shown == []
    assert "cannot show this image" in text
