"""EvidenceView: a bundle's evidence files; PNG screenshots are drawn inline where the terminal allows
(textual-image: Sixel or Kitty graphics on terminals that answer for them, coloured half-blocks on
other terminals), otherwise listed by path.

``CODEBOX_IMAGES`` chooses: ``auto`` (default: the best the terminal supports), ``halfcell`` (always
coloured half-blocks: deterministic, used by snapshots and screenshots), ``off`` (paths only).
The terminal is asked what it supports once, before the app starts (``prepare_images``): once
Textual owns stdin the answer cannot be read any more."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from rich.markup import escape as _markup_escape
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from codebox_tui.bundle.safe_read import read_regular
from codebox_tui.bundle.verify.common import path_problem
from codebox_tui.contracts.bundle_read import ManifestFileView
from codebox_tui.settings import get_settings
from codebox_tui.textsafe import safe_text


def escape(value: object) -> str:
    """Sandbox-written text for Rich markup: control characters shown as escapes, markup escaped."""
    return _markup_escape(safe_text(value))


IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
MAX_INLINE_IMAGES = 6
MAX_IMAGE_BYTES = 32 * 1024 * 1024


def member(bundle_dir: Path, rel: str) -> Path | None:
    """The bundle file a manifest path names, or None when the verifier's path rule refuses the path
    (absolute, ``..``, a scheme or drive, a backslash: bundle/verify/common.py, ``path_problem``)."""
    return None if path_problem(rel) else bundle_dir / rel


def images_mode() -> str:
    """The ``images`` setting (``CODEBOX_IMAGES``): auto, halfcell or off."""
    return get_settings().images


def image_class() -> Any:
    """The widget class that draws images here, or None when images are off or cannot be drawn."""
    mode = images_mode()
    if mode == "off":
        return None
    try:
        from textual_image import widget as images  # noqa: PLC0415 - a heavy third-party module, loaded only when first drawn
    except Exception:  # library missing or the terminal query failed: paths only
        return None
    return images.HalfcellImage if mode == "halfcell" else images.Image


def prepare_images() -> None:
    """Ask the terminal for its graphics support now, before Textual starts reading stdin."""
    image_class()


def top_of(path: Path, ratio: float = 0.75) -> Any:
    """The image at ``path``; a tall one (a full-page screenshot) cut to its top, ``ratio`` high per width."""
    from PIL import Image  # noqa: PLC0415 - a heavy third-party module, loaded only when first drawn

    # a regular file inside the bundle only (never a symlink or FIFO the bundle's writer planted), size-capped
    with Image.open(io.BytesIO(read_regular(path, limit=MAX_IMAGE_BYTES))) as image:
        image.load()
        if image.height > image.width * ratio:
            return image.crop((0, 0, image.width, int(image.width * ratio)))
        return image.copy()


class EvidenceView(VerticalScroll, can_focus=True):
    HELP = """\
## Evidence
Files the run collected (browser screenshots, console and network logs, test reports).
Screenshots are drawn inline when the terminal can show images (Sixel, Kitty graphics, or coloured
half-blocks); set `CODEBOX_IMAGES=off` to list paths only.
"""

    DEFAULT_CSS = """
    EvidenceView { padding: 1 2; }
    EvidenceView .evidence-image { width: 56; height: auto; margin: 0 0 1 2; }
    EvidenceView .evidence-note { color: $text-muted; }
    """

    def __init__(self, bundle_dir: Path, items: list[ManifestFileView], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.bundle_dir = Path(bundle_dir)
        self.items = items
        self.images_shown: list[Path] = []

    def compose(self) -> ComposeResult:
        if not self.items:
            yield Static("No browser or test evidence files in this bundle.")
            return
        draw = image_class()
        pictures = [i for i in self.items if i.path.lower().endswith(IMAGE_SUFFIXES)]
        yield Static("[b]Evidence files[/b] (paths inside the bundle; its location is on the Provenance tab)")
        for item in self.items:
            path = member(self.bundle_dir, item.path)
            yield Static(f"  {escape(item.kind):22} {escape(item.path)}")
            if path is None:
                yield Static("    [red]not drawn:[/] the path leaves the bundle", classes="evidence-note")
                continue
            if draw is not None and item in pictures and len(self.images_shown) < MAX_INLINE_IMAGES:
                try:
                    picture = draw(top_of(path), classes="evidence-image")
                except Exception as error:  # an unreadable image: say so, keep the path
                    yield Static(f"    [red]cannot show this image:[/] {escape(str(error))}", classes="evidence-note")
                    continue
                self.images_shown.append(path)
                yield picture
        if pictures and draw is None:
            yield Static(
                "\n  Screenshots are listed as paths (images off: CODEBOX_IMAGES=off, or no image "
                "support); open them with an image viewer.",
                classes="evidence-note",
            )
