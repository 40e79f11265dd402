"""A recipe's blueprint is its author's declared set-up: a must-use plugin its ``runPHP`` step writes, before any
code under review runs, is attributed to the set-up with its exact digest; the same file changed later by the code
under review is the run's (issue #25; docs/site-state.md, "Attribution"). Through the real CLI and real Playground
sandboxes:

- a recipe whose blueprint writes a mu-plugin with ``runPHP`` and whose step only reads reads clean (before the
  change it was unclean, naming the blueprint's own file);
- the same recipe whose step rewrites that mu-plugin is unclean, naming it;
- when the blueprint activates a plugin (code under review runs in the phase), nothing is attributed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.playground

MU_FILE = "/wordpress/wp-content/mu-plugins/from-blueprint-php.php"
WRITE = (
    f"@mkdir('/wordpress/wp-content/mu-plugins'); file_put_contents('{MU_FILE}', "
    "'<?php // written by the blueprint runPHP');"
)


def _recipe_run(home: Path, tmp_path: Path, step_code: str) -> tuple[int, dict[str, Any]]:
    recipe = tmp_path / "recipe.json"
    recipe.write_text(
        json.dumps(
            {
                "schema": "wp-codebox/workspace-recipe/v1",
                "runtime": {"blueprint": {"steps": [{"step": "runPHP", "code": f"<?php {WRITE}"}]}},
                "workflow": {"steps": [{"command": "wordpress.run-php", "args": [f"code={step_code}"]}]},
            }
        ),
        encoding="utf-8",
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "codebox_tui",
            "recipe-run",
            str(recipe),
            "--artifacts-dir",
            str(tmp_path / "art"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "CODEBOX_HOME": str(home)},
    )
    assert done.stdout.strip(), done.stderr[-2000:]
    return done.returncode, json.loads(done.stdout)


def _control_files(outcome: dict[str, Any]) -> list[tuple[str, str]]:
    diff = json.loads((Path(outcome["bundleDir"]) / "files" / "site-state-diff.json").read_text(encoding="utf-8"))
    return [(c["path"], c["status"]) for c in diff["controlFiles"]]


def test_a_mu_plugin_written_by_the_blueprint_run_php_is_the_recipes_set_up(
    playground_session: Any, tmp_path: Path
) -> None:
    code, outcome = _recipe_run(Path(playground_session.home), tmp_path, f"echo file_get_contents('{MU_FILE}');")
    assert code == 0 and outcome["success"] is True, outcome
    assert _control_files(outcome) == []


def test_the_same_mu_plugin_changed_by_the_code_under_review_is_unclean(
    playground_session: Any, tmp_path: Path
) -> None:
    code, outcome = _recipe_run(
        Path(playground_session.home), tmp_path, f"file_put_contents('{MU_FILE}', '<?php // changed by the step');"
    )
    assert code == 1 and outcome["success"] is False, outcome
    failures = [f for f in outcome["stepFailures"] if f["phase"] == "site-state"]
    assert len(failures) == 1 and f"sandbox-control-file-modified ({MU_FILE})" in str(failures[0]["error"])
    assert _control_files(outcome) == [(MU_FILE, "added")]
