"""store.content.read_verified: the one way the store opens a registered bundle and confirms it is unchanged.
Real captures, a real SQLite store; the bundle folder is replaced the way a process with write access to the
artifacts folder could (another sealed bundle, the same changes re-sealed with one more file, a flipped byte)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from codebox_tui.contracts.feedback import COMMENT_KINDS
from codebox_tui.errors import ConflictError
from store.comments import add_comment
from store.content import read_verified
from store.db import BundleRecord, Store
from store.decisions import decide_on, register_bundle
from tests.factories.bundles import make_bundle, second_try, typical_change
from tests.factories.replay_index import dump_json, reseal


def _fresh(folder: Path) -> Path:
    folder.mkdir()
    return folder


@pytest.fixture
def registered(tmp_path: Path) -> tuple[Store, BundleRecord]:
    store = Store.open(tmp_path / "codebox.sqlite3")
    summary, _ = make_bundle(_fresh(tmp_path / "one"), typical_change)
    return store, register_bundle(store, summary.path)


def _refusal(store: Store, record: BundleRecord) -> list[str]:
    """The error code of each store operation that opens the registered bundle."""
    codes = []
    for operation in (
        lambda: read_verified(record),
        lambda: decide_on(store, record, "approve", approver="ana"),
        lambda: add_comment(store, record, path="added.php", kind=COMMENT_KINDS[0], body="x", author="ana"),
    ):
        with pytest.raises(ConflictError) as refused:
            operation()
        codes.append(refused.value.code)
    return codes


def test_an_unchanged_bundle_reads_with_its_recorded_id_and_digest(registered: tuple[Store, BundleRecord]) -> None:
    _store, record = registered
    content = read_verified(record)
    assert (content.bundle_id, content.content_digest) == (record.bundle_id, record.content_digest)
    assert content.patch_text == content.patch.decode()


def test_another_sealed_bundle_in_its_folder_is_refused(registered: tuple[Store, BundleRecord], tmp_path: Path) -> None:
    store, record = registered
    other, _ = make_bundle(_fresh(tmp_path / "two"), second_try)
    shutil.rmtree(record.path)
    shutil.copytree(other.path, record.path)
    assert _refusal(store, record) == ["bundle-id-mismatch"] * 3


def test_the_same_changes_resealed_under_another_id_are_refused(registered: tuple[Store, BundleRecord]) -> None:
    """Same Mode B digest (changed-files and patch untouched), one more listed file: a different bundle."""
    store, record = registered
    extra = "files/notes/extra.json"

    def build(bundle: Path, bundle_id: str, digest: str) -> None:
        dump_json(bundle / extra, {"note": "added after registration"})

    reseal(Path(record.path), {extra: ("note", "application/json")}, build)
    assert _refusal(store, record) == ["bundle-id-mismatch"] * 3


def test_a_flipped_byte_is_refused_as_an_invalid_bundle(registered: tuple[Store, BundleRecord]) -> None:
    store, record = registered
    patch = Path(record.path) / "files/patch.diff"
    data = bytearray(patch.read_bytes())
    data[0] ^= 1
    patch.write_bytes(bytes(data))
    assert _refusal(store, record) == ["bundle-invalid"] * 3
