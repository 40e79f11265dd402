"""Suites that cannot run say why and what would make them run (runtime/phpunit.py, no_tests_reason),
from PHPUnit's and the WordPress test library's real output lines."""

from __future__ import annotations

import pytest

from codebox_tui.runtime.phpunit import no_tests_reason


@pytest.mark.parametrize(
    ("output", "cause", "fix"),
    [
        (
            "PHP Fatal error:  Declaration of Test_Old::setUp() must be compatible with "
            "Yoast\\PHPUnitPolyfills\\TestCases\\TestCase::setUp(): void in /p/tests/test-old.php on line 9",
            "Declaration of Test_Old::setUp()",
            "declare `setUp(): void`, or with the PHPUnit Polyfills",
        ),
        (
            "PHP Fatal error:  Declaration of Test_Old::tearDownAfterClass() must be compatible with "
            "PHPUnit\\Framework\\TestCase::tearDownAfterClass(): void in /p/tests/test-old.php on line 4",
            "tearDownAfterClass()",
            "rename it to tear_down_after_class() and call parent::tear_down_after_class()",
        ),
        (
            "Installing...\nError: The PHPUnit Polyfills library is a requirement for running the WP test suite.\n"
            "If you are trying to run plugin/theme integration tests, make sure ...",
            "PHPUnit Polyfills library is a requirement",
            "pass --phpunit-polyfills DIR, set WP_TESTS_PHPUNIT_POLYFILLS_PATH",
        ),
        (
            "Could not find /tmp/wordpress-tests-lib/includes/functions.php, have you run bin/install-wp-tests.sh ?",
            "Could not find /tmp/wordpress-tests-lib",
            "pass --wp-tests-lib DIR, set WP_TESTS_DIR",
        ),
        (
            'PHP Fatal error:  Uncaught Error: Class "WP_UnitTestCase" not found in /p/tests/test-a.php:8',
            'Class "WP_UnitTestCase" not found',
            "load it from the bootstrap",
        ),
    ],
)
def test_known_causes_name_what_would_make_the_suite_run(output: str, cause: str, fix: str) -> None:
    reason = no_tests_reason(output)
    assert cause in reason and "to run it:" in reason and fix in reason


def test_a_bootstrap_that_exits_silently_is_named() -> None:
    reason = no_tests_reason("PHPUnit 9.6.7 by Sebastian Bergmann and contributors.\n")
    assert "bootstrap may have exited" in reason


def test_unknown_causes_keep_phpunit_s_own_words_without_advice() -> None:
    assert no_tests_reason("No tests executed!\n") == "No tests executed!"
    assert no_tests_reason("Fatal error: boom") == "Fatal error: boom"
