"""wordpress.phpunit and the browser commands through a real sandbox and real Chromium.

They run on the native backend (real PHP in bubblewrap, the page through its preview relay; docs/backends.md),
several times cheaper than Playground: what is checked here — PHPUnit's results read back, WordPress loaded at
global scope, the missing toolchain, the page probed and acted on — is Codebox's and the same on both backends.
On Playground, the fix of tests/e2e/test_wp_unittestcase.py runs PHPUnit (with the WordPress test library) and
the browser probe through the sidecar's preview. Each test here checks that its run was native."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.runtime.phpunit import ToolchainMissingError, phpunit_tool_mounts
from tests.factories.native import native_run

pytestmark = pytest.mark.native

FIXTURE = Path(__file__).resolve().parents[2] / "examples" / "plugins-for-recipes" / "shortcode-demo"
COMMANDS = [
    "inspect-mounted-inputs",
    "wordpress.run-php",
    "wordpress.phpunit",
    "wordpress.browser-probe",
    "wordpress.browser-actions",
]


@pytest.fixture
def make_native_run(tmp_path: Path) -> Iterator[Any]:
    """Factory for fresh native RunSessions; every one is closed after the test, which checks it ran natively."""
    made: list[Any] = []

    def factory(**spec_kwargs: Any) -> Any:
        run = native_run(tmp_path / f"artifacts-{len(made)}", **spec_kwargs)
        made.append(run)
        return run

    yield factory
    for run in made:
        assert run.runtime_info().backend == "native"
        run.close()


def _plugin(tmp_path: Path) -> Path:
    target = tmp_path / "shortcode-demo"
    shutil.copytree(FIXTURE, target)
    return target


def test_phpunit_runs_plugin_suite_in_sandbox(make_native_run: Any, tmp_path: Path) -> None:
    plugin = _plugin(tmp_path)
    (plugin / "tests" / "BrokenTest.php").write_text(
        "<?php\nuse PHPUnit\\Framework\\TestCase;\nfinal class BrokenTest extends TestCase {\n"
        "  public function test_wrong(): void { $this->assertSame('Hi', codebox_demo_greet('x'), 'greeting'); }\n}\n"
    )
    run = make_native_run(
        mounts=[f"{plugin}:/wordpress/wp-content/plugins/shortcode-demo:readonly"],
        commands=COMMANDS,
        extra_mounts=phpunit_tool_mounts(tmp_path / "phpunit-bin"),
    )
    result = run.execute("wordpress.phpunit", ["plugin-slug=shortcode-demo"], timeout_s=180)
    suite = run.test_suites[0]
    assert (suite.tests, suite.passed, suite.failed) == (8, 7, 1), result.stdout
    broken = next(c for c in suite.cases if c.name == "test_wrong")
    assert broken.status == "failed" and "greeting" in (broken.details or "")
    assert result.exitCode == 1
    assert (run.run_dir / "files/phpunit/1/junit.xml").read_text().startswith("<?xml")
    assert "Tests: 8" in (run.run_dir / "files/phpunit/1/output.txt").read_text()
    one = run.execute(
        "wordpress.phpunit", ["plugin-slug=shortcode-demo", "test-file=tests/GreetTest.php"], timeout_s=180
    )
    assert one.exitCode == 0 and run.test_suites[1].name == "wordpress.phpunit:2"
    assert run.test_suites[1].status == "passed" and run.test_suites[1].tests == 4


def test_phpunit_loads_wordpress_in_global_scope(make_native_run: Any, tmp_path: Path) -> None:
    """do_shortcode, $wpdb and hooks work in plugin tests (WordPress loaded at global scope, not in
    PHPUnit's bootstrap method); wordpress=none leaves loading to the suite's bootstrap, which shows why."""
    plugin = _plugin(tmp_path)
    run = make_native_run(
        mounts=[f"{plugin}:/wordpress/wp-content/plugins/shortcode-demo:readonly"],
        commands=COMMANDS,
        extra_mounts=phpunit_tool_mounts(tmp_path / "phpunit-bin"),
    )
    result = run.execute(
        "wordpress.phpunit", ["plugin-slug=shortcode-demo", "test-file=tests/WordPressTest.php"], timeout_s=180
    )
    suite = run.test_suites[0]
    assert result.exitCode == 0 and (suite.tests, suite.passed) == (3, 3), result.stdout
    assert "Warning" not in result.stdout
    scoped = run.execute(
        "wordpress.phpunit",
        ["plugin-slug=shortcode-demo", "test-file=tests/WordPressTest.php", "wordpress=none"],
        timeout_s=180,
    )
    by_name = {c.name: c.status for c in run.test_suites[1].cases}
    assert scoped.exitCode == 1
    assert by_name["test_do_shortcode_renders_the_registered_shortcode"] == "failed"


def test_phpunit_without_toolchain_is_a_clear_error(make_native_run: Any, tmp_path: Path) -> None:
    plugin = _plugin(tmp_path)
    run = make_native_run(mounts=[f"{plugin}:/wordpress/wp-content/plugins/shortcode-demo:readonly"], commands=COMMANDS)
    with pytest.raises(ToolchainMissingError) as info:
        run.execute("wordpress.phpunit", ["plugin-slug=shortcode-demo"], timeout_s=120)
    assert info.value.code == "phpunit-missing"
    assert any("/usr/share/php" in m for m in info.value.details["missing"])


@pytest.mark.chromium
def test_browser_probe_and_actions_on_shortcode_page(make_native_run: Any, tmp_path: Path) -> None:
    plugin = _plugin(tmp_path)
    run = make_native_run(mounts=[f"{plugin}:/wordpress/wp-content/plugins/shortcode-demo:readonly"], commands=COMMANDS)
    made = run.execute(
        "wordpress.run-php",
        [
            "code=require_once ABSPATH . 'wp-admin/includes/plugin.php'; activate_plugin('shortcode-demo/shortcode-demo.php');"
            " echo wp_insert_post(['post_title' => 'Greeting', 'post_content' => '[codebox_greet name=\"Eve\"]',"
            " 'post_status' => 'publish']);"
        ],
        timeout_s=120,
    )
    post_id = int(made.stdout.strip().splitlines()[-1])
    probe = run.execute("wordpress.browser-probe", [f"url=/?p={post_id}", "viewport=800x600"], timeout_s=120)
    assert probe.exitCode == 0, probe.stdout + probe.stderr
    html = (run.run_dir / "files/browser/snapshot.html").read_text()
    assert '<p class="codebox-greet">Hello, Eve!</p>' in html
    assert (run.run_dir / "files/browser/screenshot.png").read_bytes()[:4] == b"\x89PNG"
    assert {e.path for e in run.evidence} >= {"files/browser/summary.json", "files/browser/network.jsonl"}
    steps = json.dumps(
        [
            {"action": "expect", "selector": ".codebox-greet", "text": "Hello, Eve!"},
            {"action": "expect", "selector": ".codebox-greet", "text": "Hello, Mallory!", "timeout": "500ms"},
            {"action": "screenshot"},
        ]
    )
    actions = run.execute("wordpress.browser-actions", [f"url=/?p={post_id}", f"steps-json={steps}"], timeout_s=120)
    assert actions.exitCode == 1
    summary = json.loads((run.run_dir / "files/browser/2/summary.json").read_text())
    assert summary["firstFailureIndex"] == 1
    recorded = json.loads((run.run_dir / "files/browser/2/steps.json").read_text())
    assert [r["status"] for r in recorded if not r.get("implicit")] == ["passed", "failed", "skipped"]
