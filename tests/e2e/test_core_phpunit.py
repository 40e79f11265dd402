"""``wordpress.core-phpunit`` end to end through the real `codebox` CLI on the native backend: a checkout-shaped
folder (the shared core test library, the polyfills, two test classes) runs against the sandbox's WordPress,
with group and filter arguments, and its results reach the bundle as wordpress.phpunit's do. A missing or
wrong checkout is refused before anything boots."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.factories.held import codebox
from tests.factories.holds import codebox_in_process
from tests.factories.toolchains import core_checkout

pytestmark = pytest.mark.native

OPTION_TESTS = """<?php
/**
 * @group option
 */
class Tests_Codebox_Option extends WP_UnitTestCase {
    public function test_an_option_round_trips() {
        update_option( 'codebox_core', 'yes' );
        $this->assertSame( 'yes', get_option( 'codebox_core' ) );
    }

    public function test_the_checkout_is_read_only() {
        $this->assertFalse( @file_put_contents( DIR_TESTROOT . '/planted.php', '<?php' ) );
    }

    public function test_a_known_failure() {
        $this->assertSame( 2, 1 + 2 );
    }

    /**
     * @group slow
     */
    public function test_left_out_by_its_group() {
        $this->fail( 'exclude-group=slow should have left this out' );
    }
}
"""
TAXONOMY_TESTS = """<?php
class Tests_Codebox_Taxonomy extends WP_UnitTestCase {
    public function test_category_is_registered() {
        $this->assertTrue( taxonomy_exists( 'category' ) );
    }
}
"""


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return core_checkout(
        tmp_path_factory.mktemp("core") / "wordpress-develop",
        {"option/option.php": OPTION_TESTS, "taxonomy.php": TAXONOMY_TESTS},
    )


def test_core_tests_run_against_the_sandbox_and_reach_the_bundle(checkout: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    out = codebox(
        home,
        "run",
        "--backend",
        "native",
        "--command",
        "wordpress.core-phpunit",
        "--arg",
        f"core-root={checkout}",
        "--arg",
        "exclude-group=slow",
        "--json",
    )
    assert out.returncode == 1, out.stderr  # the known failure is a negative verdict
    doc = json.loads(out.stdout)
    assert doc["runtime"]["backend"] == "native"
    results = json.loads((Path(doc["artifacts"]["directory"]) / "files" / "test-results.json").read_text())
    assert results["schema"] == "wp-codebox/test-results/v1"
    [suite] = results["suites"]
    assert suite["name"] == "wordpress.core-phpunit"
    cases = {case["name"]: case["status"] for case in suite["cases"]}
    assert cases == {
        "test_an_option_round_trips": "passed",
        "test_the_checkout_is_read_only": "passed",
        "test_a_known_failure": "failed",
        "test_category_is_registered": "passed",
    }, doc["execution"]["stdout"]
    failure = next(case for case in suite["cases"] if case["name"] == "test_a_known_failure")
    assert "Failed asserting that 3 is identical to 2" in failure["message"]
    assert not (checkout / "tests" / "phpunit" / "planted.php").exists()
    paths = {ref["path"] for ref in suite["rawLogReferences"]}
    assert paths == {"files/phpunit/1/output.txt", "files/phpunit/1/junit.xml"}


@pytest.mark.parametrize(
    "given, says",
    [
        ([], "needs argument core-root="),
        (["--arg", "core-root={tmp}/nowhere"], "is not a folder on this machine"),
        (["--arg", "core-root={tmp}"], "is not a WordPress core checkout: missing tests/phpunit/includes/"),
    ],
)
def test_no_checkout_is_refused_before_anything_boots(tmp_path: Path, given: list[str], says: str) -> None:
    home = tmp_path / "home"
    out = codebox_in_process(
        home,
        "run",
        "--backend",
        "native",
        "--command",
        "wordpress.core-phpunit",
        *[arg.format(tmp=tmp_path) for arg in given],
        "--json",
    )
    assert out.returncode == 2, out.stderr
    failure = json.loads(out.stdout)
    assert failure["error"]["field"] == "core-root" and says in failure["error"]["message"]
    assert "WordPress core checkout" in failure["error"]["message"]  # what was expected
    assert not (home / "artifacts").exists() or not any((home / "artifacts").iterdir())  # nothing booted


def test_a_recipe_step_runs_the_checkout_it_names_relative_to_the_recipe(checkout: Path, tmp_path: Path) -> None:
    """In a recipe, core-root= is relative to the recipe's folder (as every recipe path is); `recipe validate`
    refuses a folder that is not a checkout, naming the step's arguments."""
    recipe = {
        "schema": "wp-codebox/workspace-recipe/v1",
        "runtime": {"backend": "native"},
        "workflow": {
            "steps": [
                {
                    "command": "wordpress.core-phpunit",
                    "args": [f"core-root={checkout.name}", "filter=test_category_is_registered"],
                }
            ]
        },
    }
    (checkout.parent / "core.json").write_text(json.dumps(recipe))
    home = tmp_path / "home"
    out = codebox(home, "recipe-run", str(checkout.parent / "core.json"), "--json")
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    results = json.loads((Path(json.loads(out.stdout)["bundleDir"]) / "files" / "test-results.json").read_text())
    assert [case["name"] for suite in results["suites"] for case in suite["cases"]] == ["test_category_is_registered"]
    recipe["workflow"]["steps"][0]["args"] = ["core-root=."]
    (tmp_path / "bad.json").write_text(json.dumps(recipe))
    bad = codebox(home, "recipe", "validate", str(tmp_path / "bad.json"), "--json")
    assert bad.returncode == 2
    [issue] = json.loads(bad.stdout)["issues"]
    assert issue["path"] == "$.workflow.steps[0].args" and "not a WordPress core checkout" in issue["message"]


def test_a_checkout_without_polyfills_is_refused_before_anything_boots(checkout: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    shutil.copytree(checkout / "tests", bare / "tests")  # no vendor/: composer install was never run
    home = tmp_path / "home"
    out = codebox_in_process(
        home,
        "run",
        "--backend",
        "native",
        "--command",
        "wordpress.core-phpunit",
        "--arg",
        f"core-root={bare}",
        "--json",
        env={"WP_TESTS_PHPUNIT_POLYFILLS_PATH": None},
    )
    assert out.returncode == 4, out.stdout  # a missing toolchain, as wordpress.phpunit reports it
    error = json.loads(out.stdout)["error"]
    assert (
        error["code"] == "phpunit-polyfills-missing"
        and str(bare / "vendor/yoast/phpunit-polyfills") in error["message"]
    )
    assert not (home / "sandboxes").exists()  # nothing booted
