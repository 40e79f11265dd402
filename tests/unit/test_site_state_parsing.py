"""What the host makes of the sandbox's site-state output: it is hostile input, validated and
redacted on the host (the real PHP side runs in tests/e2e/test_site_state.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from codebox_tui.errors import SandboxError
from codebox_tui.runtime import site_state
from codebox_tui.runtime.backend import PhpResult


class ScriptedSandbox:
    """Answers every run_php and probe_php with one fixed output (the sandbox under test is the parser, not PHP)."""

    wordpress_version = "6.5.5"
    php_version = "8.3.0"
    table_prefix = "wp_"

    def __init__(self, text: str) -> None:
        self.text = text
        self.codes: list[str] = []

    def run_php(self, code: str, timeout_s: float) -> PhpResult:
        self.codes.append(code)
        return PhpResult(text=self.text, exit_code=0)

    probe_php = run_php


def _summary_output(**changes: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "tablePrefix": "wp_",
        "truncated": [],
        "transients": 0,
        "phpMs": 3,
        "options": {
            "my_api_key": {"sha256": "a" * 64, "bytes": 6, "autoload": "yes", "preview": "s3cr3t"},
            "blogname": {"sha256": "b" * 64, "bytes": 4, "autoload": "yes", "preview": "Blog"},
        },
        "tables": [],
        "posts": [],
        "terms": [],
        "users": [],
        "roles": [],
        "cron": [],
        "rewriteRules": [],
        "activePlugins": [],
        "theme": {"stylesheet": "t", "template": "t"},
        "siteurl": "http://x",
        "home": "http://x",
    }
    out.update(changes)
    return out


def test_a_secret_preview_the_sandbox_sends_is_dropped_on_the_host() -> None:
    sandbox = ScriptedSandbox(json.dumps(_summary_output()))
    summary = site_state.take_summary(sandbox)  # type: ignore[arg-type]
    assert summary.options["my_api_key"].preview is None and summary.options["my_api_key"].redacted
    assert summary.options["blogname"].preview == "Blog"
    assert summary.tables == {} and summary.timing["phpMs"] == 3  # PHP's empty arrays are empty maps
    assert "$codebox_state_request" in sandbox.codes[0]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("Fatal error: out of memory", "printed no JSON result"),
        ("[1, 2]", "expected a JSON object"),
        (
            json.dumps({"error": {"code": "database-missing", "message": "the site database x does not exist"}}),
            "the site database x does not exist",
        ),
        (json.dumps(_summary_output(users={"1": {"login": 5}})), "malformed at users.1.login"),
        (json.dumps(_summary_output(extra="field")), "malformed at extra"),
    ],
)
def test_malformed_sandbox_output_is_a_clear_sandbox_error(text: str, needle: str) -> None:
    with pytest.raises(SandboxError, match=needle):
        site_state.take_summary(ScriptedSandbox(text))  # type: ignore[arg-type]
