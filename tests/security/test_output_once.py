"""A command's output is kept once (docs/contracts.md, "Execution results"): the output cap bounds what
a run writes and prints, not a multiple of it. Before, `run --json` repeated the output four times
(each execution and its result envelope, in `executions` and again in `execution`) and `commands.jsonl`
twice, so a 10 MiB cap became ~40 MiB on stdout. The output is kept by the host-side run lifecycle whatever the
backend, so this runs on the native backend (real PHP in bubblewrap), the faster one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.factories.native import run_natively

pytestmark = pytest.mark.native

SIZE = 2 * 1024 * 1024


def test_a_large_output_is_in_the_run_document_and_commands_jsonl_once(  # type: ignore[no-untyped-def]
    playground_session, tmp_path: Path
) -> None:
    home = playground_session.private_home(tmp_path)
    code = f"echo 'HEAD-', str_repeat('0123456789abcdef', {SIZE // 16}), '-TAIL';"
    out = run_natively(
        *("--command", "wordpress.run-php", "--arg", f"code={code}"),
        *("--artifacts", str(tmp_path / "artifacts"), "--json"),
        home=home,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    document = json.loads(out.stdout)
    execution = document["execution"]
    assert execution["stdout"].startswith("HEAD-") and execution["stdout"].endswith("-TAIL")
    assert len(execution["stdout"]) > SIZE
    assert len(out.stdout) < 1.2 * SIZE, len(out.stdout)  # once, not four times
    # where the other places point instead of repeating it
    assert "stdout" not in execution["result"]
    assert execution["result"]["diagnostics"]["outputRef"]["stdout"] == "/stdout"
    [entry] = document["executions"]
    assert entry["id"] == execution["id"] and entry["stdout"] == ""
    assert entry["diagnostics"]["outputRef"]["stdout"] == "/execution/stdout"

    commands = Path(document["artifacts"]["commands"])
    assert commands.stat().st_size < 1.2 * SIZE, commands.stat().st_size
    [line] = [json.loads(text) for text in commands.read_text().splitlines()]
    assert line["stdout"] == execution["stdout"] and "stdout" not in line["result"]
