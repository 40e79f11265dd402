"""Evidence tab: a PNG screenshot in the bundle is drawn inline (coloured half-blocks here; Sixel or
Kitty graphics on terminals that support them), and listed by path only when images are off."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.review import ReviewScreen
from codebox_tui.settings import reload_settings
from tests.factories.screenshots import build_demo_bundle
from widgets.evidence_view import EvidenceView


def _text(view: EvidenceView) -> str:
    return "\n".join(str(s.render()) for s in view.query(Static))


async def _evidence(bundle: Path) -> tuple[list[Path], str]:
    app = CodeboxApp(bundle)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
        app.screen.query_one("#tabs").active = "tab-evidence"  # type: ignore[attr-defined]
        await pilot.pause()
        view = app.screen.query_one(EvidenceView)
        return list(view.images_shown), _text(view)


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


async def test_unreadable_png_shows_a_message_not_a_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEBOX_IMAGES", "halfcell")
    reload_settings()
    bundle = build_demo_bundle(tmp_path)
    (bundle / "files" / "browser" / "screenshot.png").write_bytes(b"not a png")
    shown, text = await _evidence(bundle)
    assert shown == []
    assert "cannot show this image" in text


async def test_a_planted_symlink_screenshot_is_not_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundle's writer replaces the screenshot with a symlink to an image elsewhere on the host: the
    Evidence tab names the file but draws nothing it would have to follow a link for."""
    monkeypatch.setenv("CODEBOX_IMAGES", "halfcell")
    reload_settings()
    bundle = build_demo_bundle(tmp_path / "a")
    outside = tmp_path / "host-picture.png"
    shot = bundle / "files" / "browser" / "screenshot.png"
    outside.write_bytes(shot.read_bytes())
    shot.unlink()
    shot.symlink_to(outside)
    shown, text = await _evidence(bundle)
    assert shown == []
    assert "cannot show this image" in text and "symlink" in text


async def test_a_manifest_path_that_leaves_the_bundle_is_not_drawn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codebox_tui.contracts.bundle_read import ManifestFileView
    from tests.factories.widget_hosts import Recorder

    monkeypatch.setenv("CODEBOX_IMAGES", "halfcell")
    reload_settings()
    bundle = build_demo_bundle(tmp_path / "a")
    (tmp_path / "outside.png").write_bytes((bundle / "files" / "browser" / "screenshot.png").read_bytes())
    items = [
        ManifestFileView(path="../outside.png", kind="browser-screenshot"),
        ManifestFileView(path=str(tmp_path / "outside.png"), kind="browser-screenshot"),
        ManifestFileView(path="files/browser/screenshot.png", kind="browser-screenshot"),
    ]

    app = Recorder(EvidenceView(bundle, items))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        view = app.query_one(EvidenceView)
        text = _text(view)
        assert view.images_shown == [bundle / "files" / "browser" / "screenshot.png"]
        assert text.count("the path leaves the bundle") == 2
