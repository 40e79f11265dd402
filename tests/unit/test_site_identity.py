"""Pure rules behind held previews and contained sites (docs/sites.md): the public URL a tunnel gives, and how a
site's source digest and id are made from its inputs (real folders, no sandbox)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codebox_tui.contracts.site import SiteMount, SiteRuntime
from codebox_tui.errors import BadInputError
from codebox_tui.lifecycle.request import public_url_from_text
from codebox_tui.sites.store import folder_digest, site_id_for, source_digest

RUNTIME = SiteRuntime(backend="native", wp="6.5", wordpressVersion="6.5.5", php="8.2")


@pytest.mark.parametrize(("text", "expected"), [
    ("https://tunnel.example/", "https://tunnel.example"),
    ("http://127.0.0.1:9400", "http://127.0.0.1:9400"),
    ("https://host.example/sub/path/", "https://host.example/sub/path"),
    (None, None),
])
def test_public_url_is_normalised(text: str | None, expected: str | None) -> None:
    assert public_url_from_text(text) == expected


@pytest.mark.parametrize("text", ["ftp://tunnel.example", "tunnel.example", "https://", "https://h.example/?a=1",
                                  "https://h.example/#x", "https://user:pw@h.example", "https://h.example/a b"])
def test_public_url_refusals_name_the_option(text: str) -> None:
    with pytest.raises(BadInputError) as caught:
        public_url_from_text(text)
    assert caught.value.field == "preview-public-url" and caught.value.code == "invalid-public-url"


def _folder(root: Path, files: dict[str, str]) -> Path:
    root.mkdir()
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_folder_digest_follows_content_not_place_links_or_git(tmp_path: Path) -> None:
    one = _folder(tmp_path / "one", {"a.php": "<?php", "sub/b.txt": "b"})
    two = _folder(tmp_path / "two", {"a.php": "<?php", "sub/b.txt": "b"})
    assert folder_digest(one) == folder_digest(two)  # the same content elsewhere
    (two / ".git").mkdir()
    (two / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    os.symlink("/etc/passwd", two / "link")
    assert folder_digest(one) == folder_digest(two)  # the sandbox's copy has neither
    (two / "sub" / "b.txt").write_text("changed")
    assert folder_digest(one) != folder_digest(two)
    (two / "sub" / "b.txt").write_text("b")
    (two / "a.php").chmod(0o755)
    assert folder_digest(one) != folder_digest(two)  # permission bits are content too


def test_source_digest_and_site_id(tmp_path: Path) -> None:
    mount = SiteMount(source=str(tmp_path / "x"), target="/wordpress/wp-content/plugins/x", mode="readonly",
                      digest="0" * 64)
    moved = mount.model_copy(update={"source": "/elsewhere/x"})
    blueprint = {"siteOptions": {"blogname": "A"}}
    digest = source_digest(RUNTIME, [mount], blueprint)
    assert source_digest(RUNTIME, [moved], blueprint) == digest  # host paths are not inputs
    assert source_digest(RUNTIME, [mount], {"siteOptions": {"blogname": "B"}}) != digest
    assert source_digest(RUNTIME.model_copy(update={"php": "8.3"}), [mount], blueprint) != digest
    assert source_digest(RUNTIME, [mount.model_copy(update={"mode": "readwrite"})], blueprint) != digest
    site_id = site_id_for("codebox-cli", digest)
    assert site_id == site_id_for("codebox-cli", digest) and site_id.startswith("prepared-") and len(site_id) == 25
    assert site_id_for("studio", digest) != site_id
