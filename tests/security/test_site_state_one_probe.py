"""The site-state summary and the wp-content listing are taken by one probe process at each end of a run
(runtime/content_listing.py `summary_and_listing`; docs/site-state.md). Both halves must still do their job:

- a PHP file the run plants in wp-content outside every mount is flagged ``files-outside-mounts`` (high) beside
  an available summary;
- a run that floods wp-content with long file names so the listing overflows the output cap loses only the
  listing (a ``site-state.unavailable`` warning for the files part): the summary, printed first, is whole, so
  the database diff still stands. Were the listing first, the flood would cut the summary instead.

The real CLI, one real native sandbox per run (the rule is the host's, the same on either backend; each bundle
checks the backend it records)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.factories.held import codebox
from tests.factories.holds import linked_home
from tests.factories.native import NATIVE, recorded_backend

pytestmark = pytest.mark.native


def _run(home: Path, tmp_path: Path, code: str, **env: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    done = codebox(
        home,
        *("run", "--backend", "native", "--quiet", "--json", "--command", "wordpress.run-php"),
        *("--arg", f"code={code}", "--artifacts", str(tmp_path / "artifacts")),
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    bundle = Path(json.loads(done.stdout)["artifacts"]["directory"])
    assert recorded_backend(bundle) == NATIVE
    diff = json.loads((bundle / "files" / "site-state-diff.json").read_text())
    events = [json.loads(line) for line in (bundle / "events.jsonl").read_text().splitlines() if line.strip()]
    return diff, events


def test_a_php_file_planted_outside_the_mounts_is_flagged_beside_the_summary(
    codebox_home: Path, tmp_path: Path
) -> None:
    home = linked_home(codebox_home, tmp_path)
    diff, events = _run(home, tmp_path, "file_put_contents('/wordpress/wp-content/planted.php', '<?php echo 1;');")
    codes = {risk["code"]: risk for risk in diff["risks"]}
    assert "summary-unavailable" not in codes
    assert codes["files-outside-mounts"]["severity"] == "high"
    assert [f["path"] for f in diff["filesOutsideMounts"]] == ["/wordpress/wp-content/planted.php"]
    assert [e["data"]["phase"] for e in events if e["type"] == "site-state.summary"] == ["before", "after"]


def test_a_listing_flood_past_the_output_cap_leaves_the_summary_whole(codebox_home: Path, tmp_path: Path) -> None:
    home = linked_home(codebox_home, tmp_path)
    # 1,500 names of ~200 bytes: ~300 KB of listing against a 128 KiB cap (a default site's summary is ~26 KB)
    flood = (
        "@mkdir('/wordpress/wp-content/uploads/flood', 0777, true);"
        " for ($i = 0; $i < 1500; $i++) { touch('/wordpress/wp-content/uploads/flood/' . str_repeat('x', 180) . $i); }"
        " update_option('codebox_flooded', 'yes');"
    )
    diff, events = _run(home, tmp_path, flood, CODEBOX_MAX_COMMAND_OUTPUT_BYTES="131072")
    codes = {risk["code"] for risk in diff["risks"]}
    assert "summary-unavailable" not in codes  # the database diff stands …
    assert "codebox_flooded" in json.dumps(diff)  # … and saw what the run did to the database
    files_lost = [e for e in events if e["type"] == "site-state.unavailable" and e["data"].get("part") == "files"]
    assert [e["data"]["phase"] for e in files_lost] == ["after"]  # only the flooded listing was cut
