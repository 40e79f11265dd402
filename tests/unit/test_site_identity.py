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


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://tunnel.example/", "https://tunnel.example"),
        ("http://127.0.0.1:9400", "http://127.0.0.1:9400"),
        ("https://host.example/sub/path/", "https://host.example/sub/path"),
        (None, None),
    ],
)
def test_public_url_is_normalised(text: str | None, expected: str | None) -> None:
    assert public_url_from_text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "ftp://tunnel.example",
        "tunnel.example",
        "https://",
        "https://h.example/?a=1",
        "https://h.example/#x",
        "https://user:pw@h.example",
        "https://h.example/a b",
    ],
)
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
    mount = SiteMount(
        source=str(tmp_path / "x"), target="/wordpress/wp-content/plugins/x", mode="readonly", digest="0" * 64
    )
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


def test_the_design_documents_shapes_validate_against_the_generated_schemas() -> None:
    """What a browser-hosted implementation writes (preview and session ids, browser-contained persistence, an
    input hash) is accepted as well as what Codebox writes (docs/sites.md, "Documents")."""
    import jsonschema

    from codebox_tui.contracts.schemas import generate_json_schema
    from codebox_tui.contracts.site import CONTAINED_SITE_SCHEMA, CONTAINED_SITE_STATUS_SCHEMA

    hex64 = "ab" * 32
    handle = {
        "schema": CONTAINED_SITE_SCHEMA,
        "site_id": "prepared-a1b2c3d4e5f6a7b8",
        "preview_id": "preview-1234abcd5678ef90",
        "session_id": "browser-session-123",
        "caller_id": "studio-native",
        "status": "ready",
        "persistence": "browser-contained",
        "source_digest": {"algorithm": "sha256", "value": hex64},
        "recovery": {
            "ability": "wp-codebox/get-browser-contained-site-status",
            "input": {"cache_key": "prepared-a1b2c3d4e5f6a7b8", "input_hash": hex64, "source_digest": hex64},
        },
    }
    status = {
        "success": True,
        "schema": CONTAINED_SITE_STATUS_SCHEMA,
        "site_id": "prepared-a1b2c3d4e5f6a7b8",
        "status": "recoverable",
        "blueprint_ref": {
            "schema": "wp-codebox/browser-blueprint-ref/v1",
            "ref": f"prepared:prepared-a1b2c3d4e5f6a7b8:{hex64}",
        },
    }
    jsonschema.Draft202012Validator(generate_json_schema(CONTAINED_SITE_SCHEMA)).validate(handle)
    jsonschema.Draft202012Validator(generate_json_schema(CONTAINED_SITE_STATUS_SCHEMA)).validate(status)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(generate_json_schema(CONTAINED_SITE_STATUS_SCHEMA)).validate(
            {**status, "status": "maybe"}
        )
