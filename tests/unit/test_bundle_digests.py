"""Mode B has one implementation: the streamed form (over bundle files) and the in-memory form (apply-back,
which digests exactly the bytes it then uses) frame the same bytes the same way, as the wire format says."""

from __future__ import annotations

import hashlib
from pathlib import Path

from codebox_tui.bundle.digests import content_digest, content_digest_b, content_digest_of


def _write(root: Path, changed: bytes, patch: bytes) -> None:
    (root / "files").mkdir()
    (root / "files" / "changed-files.json").write_bytes(changed)
    (root / "files" / "patch.diff").write_bytes(patch)


def test_mode_b_is_the_domain_framed_hash_of_changed_files_then_patch(tmp_path: Path) -> None:
    changed, patch = b'{"files":[]}\n', b"diff --git a/x b/x\n\r\nend"
    _write(tmp_path, changed, patch)
    wire = (
        b"wp-codebox/artifact-content/v1\n"
        + b"files/changed-files.json\n"
        + changed
        + b"\n"
        + b"files/patch.diff\n"
        + patch
    )
    expected = hashlib.sha256(wire).hexdigest()
    assert content_digest_b(tmp_path) == expected
    assert content_digest_of(changed, patch) == expected
    assert content_digest(tmp_path, ["files/changed-files.json", "files/patch.diff"]) == expected


def test_mode_b_depends_on_every_byte_and_on_the_order(tmp_path: Path) -> None:
    base = content_digest_of(b"a", b"b")
    assert content_digest_of(b"a", b"b ") != base
    assert content_digest_of(b"b", b"a") != base
    assert content_digest_of(b"a\n", b"b") != content_digest_of(b"a", b"\nb")
