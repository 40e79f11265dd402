"""Every human line the CLI prints goes through the escaping writers of codebox_tui/cli/output.py (``say``, ``show``, ``progress``,
``emit_json``): the CLI modules never call a raw writer themselves, so a command's sandbox-written stdout, a
test's failure message or a file name cannot reach the maintainer's terminal as control sequences."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import codebox_tui

PACKAGE = Path(codebox_tui.__file__).parent
CLI_MODULES = sorted(p for p in (PACKAGE / "cli").glob("*.py") if p.name != "output.py")
RAW_WRITERS = {
    ("typer", "echo"),
    ("click", "echo"),
    ("typer", "secho"),
    ("click", "secho"),
    ("stdout", "write"),
    ("stderr", "write"),
    ("", "print"),
}


def raw_writes(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name):
            key = ("", func.id)
        elif isinstance(func, ast.Attribute):
            owner = func.value
            key = (owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", ""), func.attr)
        else:
            continue
        if key in RAW_WRITERS:
            found.append(f"line {node.lineno}: {'.'.join(filter(None, key))}(...)")
    return found


def test_the_guard_finds_raw_writers() -> None:
    sample = "import sys, typer\nsys.stdout.write(x)\ntyper.echo(y)\nprint(z)\nsys.stderr.write(w)\nshow(v)\n"
    assert len(raw_writes(sample)) == 4


@pytest.mark.parametrize("module", CLI_MODULES, ids=lambda p: p.name)
def test_cli_modules_print_only_through_the_escaping_writers(module: Path) -> None:
    assert raw_writes(module.read_text(encoding="utf-8")) == []


HOSTILE = "Failed asserting \x1b[2J\x1b]0;pwned\x07 that\r\u202e1 === 2\nsecond line\tend"


def test_the_reports_of_evaluate_patch_and_recipe_run_escape_failure_messages(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Test failure messages and probe problems are PHPUnit's / the page's words, i.e. the sandbox's."""
    from codebox_tui.cli.recipe import _print_evaluation, _print_recipe_outcome

    counts = {"tests": 2, "passed": 1, "failed": 1, "skipped": 0}
    _print_evaluation(
        {
            "applied": True,
            "bundleDir": "/tmp/b",
            "tests": {
                "verdict": "fails",
                "reason": HOSTILE,
                "fixed": [],
                "broken": ["t"],
                "stillFailing": [],
                "added": [],
                "removed": [],
                "before": counts,
                "after": counts,
            },
            "failures": {"before": [], "after": [{"test": "Test_X::test_y\x1b[8m", "message": HOSTILE}]},
            "probe": {"frontEnd": {"url": "/", "status": "failed", "problems": [HOSTILE]}},
        }
    )
    _print_recipe_outcome(
        {
            "status": "failed",
            "bundleDir": "/tmp/b",
            "probes": [],
            "failures": [{"what": "step 1\x1b[1A", "message": HOSTILE}],
            "warnings": [{"what": "probe", "message": HOSTILE}],
        }
    )
    out = capsys.readouterr().out
    assert out.count("Failed asserting \\x1b[2J\\x1b]0;pwned\\x07 that\\x0d\\u202e1 === 2\nsecond line\tend") == 5
    assert "Test_X::test_y\\x1b[8m" in out and "step 1\\x1b[1A" in out
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", out)
