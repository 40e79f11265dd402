"""A prepared site's snapshot is host data made from sandbox output, kept under $CODEBOX_HOME/sites (docs/sites.md,
"Trust"). Whoever rewrites it — a planted option value with the document's own hashes recomputed, a file blob
swapped for a backdoor, the document replaced by a link — must not get it booted: `site status` says `miss` and
`site open` refuses before anything boots (exit 5, `site-snapshot-tampered`). A real site prepared by the real CLI
on the native backend, tampered on disk, then asked for through the real CLI."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from codebox_tui.contracts.site_state import snapshot_hashes
from tests.factories.held import codebox

pytestmark = pytest.mark.native

BACKDOOR = b"<?php if (isset($_GET['x'])) { eval($_GET['x']); }\n"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """(a home holding one prepared site, its id): a plugin folder mounted read-write, so its file is a blob."""
    tmp = tmp_path_factory.mktemp("tamper")
    plugin = tmp / "tiny"
    plugin.mkdir()
    (plugin / "tiny.php").write_text("<?php\n/* Plugin Name: Tiny */\n")
    home = tmp / "home"
    created = codebox(
        home,
        "site",
        "create",
        "--backend",
        "native",
        "--json",
        "--mount",
        f"{plugin}:/wordpress/wp-content/plugins/tiny",
    )
    assert created.returncode == 0, created.stdout + created.stderr
    return home, json.loads(created.stdout)["site_id"]


def _plant_option(folder: Path) -> None:
    """Rewrite blogname in the document and recompute the document's own table and file hashes, as an attacker
    who knows the format would: only the host's digest of the document in site.json still tells."""
    path = folder / "snapshot.json"
    doc = json.loads(path.read_text())
    for table in doc["database"]["tables"]:
        for row in table["rows"]:
            if table["name"].endswith("options") and row.get("option_name") == "blogname":
                row["option_value"] = "<script>planted</script>"
    doc["hashes"] = snapshot_hashes(doc["database"], doc["files"])
    path.write_text(json.dumps(doc, sort_keys=True) + "\n")


def _swap_blob(folder: Path) -> None:
    """Overwrite the plugin file's blob with a backdoor (the document still names the old sha256)."""
    doc = json.loads((folder / "snapshot.json").read_text())
    entry = next(e for e in doc["files"] if e["path"] == "plugins/tiny/tiny.php")
    blob = folder / "files" / "runtime-snapshots" / "blobs" / entry["sha256"]
    assert blob.is_file()
    blob.write_bytes(BACKDOOR)


def _swap_blob_and_entry(folder: Path) -> None:
    """Swap the blob and rewrite its entry (sha256, bytes) and the document's hashes to match the backdoor."""
    path = folder / "snapshot.json"
    doc = json.loads(path.read_text())
    entry = next(e for e in doc["files"] if e["path"] == "plugins/tiny/tiny.php")
    digest = hashlib.sha256(BACKDOOR).hexdigest()
    blobs = folder / "files" / "runtime-snapshots" / "blobs"
    (blobs / digest).write_bytes(BACKDOOR)
    entry.update(sha256=digest, bytes=len(BACKDOOR), blob=f"files/runtime-snapshots/blobs/{digest}")
    doc["hashes"] = snapshot_hashes(doc["database"], doc["files"])
    path.write_text(json.dumps(doc, sort_keys=True) + "\n")


def _link_document(folder: Path) -> None:
    """Replace the document with a link to a copy of it elsewhere (a link is never followed)."""
    elsewhere = folder.parent.parent / "elsewhere.json"
    shutil.copyfile(folder / "snapshot.json", elsewhere)
    (folder / "snapshot.json").unlink()
    (folder / "snapshot.json").symlink_to(elsewhere)


@pytest.mark.parametrize(
    "tamper",
    [_plant_option, _swap_blob, _swap_blob_and_entry, _link_document],
    ids=["planted-option", "swapped-blob", "swapped-blob-and-entry", "linked-document"],
)
def test_a_tampered_site_is_a_miss_and_is_never_booted(
    site: tuple[Path, str], tmp_path: Path, tamper: Callable[[Path], None]
) -> None:
    source_home, site_id = site
    home = tmp_path / "home"
    shutil.copytree(source_home / "sites", home / "sites", symlinks=True)
    before = codebox(home, "site", "status", site_id, "--json")
    assert json.loads(before.stdout)["status"] == "recoverable", before.stdout + before.stderr
    tamper(home / "sites" / site_id)
    status = codebox(home, "site", "status", site_id, "--json")
    assert status.returncode == 1, status.stdout + status.stderr
    assert json.loads(status.stdout)["status"] == "miss"
    opened = codebox(home, "site", "open", site_id, "--json")
    error = json.loads(opened.stdout)["error"]
    expected = "site-snapshot-missing" if tamper is _link_document else "site-snapshot-tampered"
    assert error["code"] == expected, opened.stdout
    assert opened.returncode == (2 if tamper is _link_document else 5)
    assert not (home / "sandboxes").exists() and not (home / "artifacts").exists()  # nothing booted
