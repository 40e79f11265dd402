"""The `safe` wordpress-state export leaves logins out (docs/site-state.md, "The wordpress-state export"):
through the real `codebox run` CLI on native sandboxes, `wordpress.capture-state-bundle sections=users` writes
an export in which the site's login (`admin`) appears nowhere — neither as `login` nor through what WordPress
derives from it (display name, nicename) — while `redaction=none` carries it (so the grep can see it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.factories.native import run_natively

pytestmark = pytest.mark.native

LOGIN = '"admin"'  # the prepared site's one user, quoted as JSON writes it


def _export(tmp_path: Path, redaction: str) -> str:
    out = run_natively(
        *("-c", "wordpress.capture-state-bundle", "-a", "sections=users", "-a", f"redaction={redaction}"),
        *("--artifacts", str(tmp_path / redaction), "--json", "--quiet"),
    )
    doc = json.loads(out.stdout)
    assert doc["execution"]["exitCode"] == 0, (doc["execution"], out.stderr)
    exports = list((Path(doc["artifacts"]["directory"]) / "files" / "wordpress-state").glob("*.json"))
    assert len(exports) == 1, exports
    return exports[0].read_text()


def test_the_safe_export_has_no_login_and_the_unredacted_one_has(tmp_path: Path) -> None:
    safe = _export(tmp_path, "safe")
    users = next(s["data"]["items"] for s in json.loads(safe)["sections"] if s["section"] == "users")
    assert users and all(set(user) == {"id", "roles", "registered"} for user in users), users
    assert LOGIN not in safe
    assert LOGIN in _export(tmp_path, "none")
