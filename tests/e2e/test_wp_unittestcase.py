"""`codebox evaluate-patch` on a real `WP_UnitTestCase` suite, end to end through the real CLI: the WordPress
core PHPUnit library and the PHPUnit Polyfills from ``../shared/toolchains`` (third-party, never copied into the
repository), Debian's PHPUnit, the sandbox's SQLite test site.

Verdicts never claim more than was checked: improvement / regression / neutral only when tests ran on
both sides, ``untested`` and ``plugin-broken`` otherwise; only improvement and neutral exit 0.

The fix runs on real Playground: the one Playground evaluation of this suite (the test library mounted into
PHP-wasm, its install in a separate PHP process, the front-end probe through the sidecar's preview). Everything
else is Codebox's reading of what the suite and the probes report, the same on both backends
(tests/e2e/test_backend_parity.py compares them), so it runs on the native backend (real PHP in bubblewrap,
several times cheaper, docs/backends.md), and each native test checks that its bundle says ``native``: the
fatal-on-load patch with the toolchain from the plugin's vendor/, the other verdicts, and ``wordpress.phpunit``'s
own options and fresh test site."""

from __future__ import annotations

import difflib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.factories.native import native_run
from tests.factories.suites import assert_ran_on
from tests.factories.toolchains import PHPUNIT_POLYFILLS, WP_TESTS_LIB

pytestmark = pytest.mark.native

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "wp-unittest-plugin"
PLUGIN = EXAMPLE / "word-stats"
PATCHES = EXAMPLE / "patches"
LIB = WP_TESTS_LIB
POLYFILLS = PHPUNIT_POLYFILLS
REPEATED = "Test_Word_Stats::test_repeated_spaces_are_not_words"
SHORTCODE = "Test_Word_Stats::test_shortcode_counts_the_current_post"
TOOLCHAIN_ENV = ("WP_TESTS_DIR", "WP_TESTS_PHPUNIT_POLYFILLS_PATH")
# One statement on the test site's own database file (not the site's), through PDO: prints its result.
LEFTOVER_PHP = (
    "$db = new PDO('sqlite:/wordpress/wp-content/database/.ht.wptests.sqlite'); "
    "$r = $db->query(\"%s\"); echo $r ? ($r->fetchColumn() ?: $r->rowCount()) : 'failed';"
)


@pytest.fixture(scope="module")
def toolchains() -> tuple[Path, Path]:
    """The shared toolchains must be there: a missing one fails the test run, never skips it."""
    missing = [
        str(p / f)
        for p, f in ((LIB, "includes/bootstrap.php"), (POLYFILLS, "phpunitpolyfills-autoload.php"))
        if not (p / f).is_file()
    ]
    if missing:
        pytest.fail(
            "the WordPress test toolchains are missing (expected beside the repository in "
            f"../shared/toolchains, see its README): {', '.join(missing)}"
        )
    return LIB, POLYFILLS


def _evaluate(
    tmp_path: Path, home: Path, plugin: Path, patch: Path, *extra: str, json_out: bool = True, backend: str = "native"
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in TOOLCHAIN_ENV}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "codebox_tui",
            "evaluate-patch",
            "--backend",
            backend,
            "--plugin",
            str(plugin),
            "--patch",
            str(patch),
            "--artifacts-dir",
            str(tmp_path / "art"),
            *extra,
            *(["--json"] if json_out else []),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
        env={**env, "CODEBOX_HOME": str(home)},
        cwd=tmp_path,
    )
    assert_ran_on(backend, proc.stdout, proc.stderr)  # a moved test cannot silently run on the other backend
    return proc


def _with_toolchain(lib: Path, polyfills: Path) -> list[str]:
    return ["--wp-tests-lib", str(lib), "--phpunit-polyfills", str(polyfills)]


def _copy(tmp_path: Path, *, vendor: bool = True) -> Path:
    dest = tmp_path / "word-stats"
    shutil.copytree(PLUGIN, dest, ignore=None if vendor else shutil.ignore_patterns("vendor"))
    return dest


def _patch(path: Path, name: str, old: str, new: str) -> Path:
    """A unified diff (as `git diff` writes it) turning ``old`` into ``new`` in the plugin file ``name``."""
    path.write_text(
        "".join(
            difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{name}", f"b/{name}")
        )
    )
    return path


def _doc(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.stdout.strip(), proc.stderr[-3000:]
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


@pytest.mark.playground
@pytest.mark.timeout(900)  # two suites and a probe in PHP-wasm: over 300 s on a loaded 2-core machine
def test_fix_patch_is_an_improvement_with_per_side_totals_and_messages(
    playground_session: Any, tmp_path: Path, toolchains: tuple[Path, Path]
) -> None:
    plugin = _copy(tmp_path)
    original = (plugin / "src" / "Counter.php").read_bytes()
    proc = _evaluate(
        tmp_path,
        Path(playground_session.home),
        plugin,
        PATCHES / "word-stats-fix.patch",
        *_with_toolchain(*toolchains),
        backend="playground",
    )
    doc = _doc(proc)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert doc["success"] is True and doc["applied"] is True
    tests = doc["tests"]
    assert tests["verdict"] == "improvement"
    assert (tests["fixed"], tests["broken"], tests["stillFailing"]) == ([REPEATED], [], [])
    # per side, never summed: 6 WP_UnitTestCase tests before and after
    assert {k: tests["before"][k] for k in ("tests", "passed", "failed")} == {"tests": 6, "passed": 5, "failed": 1}
    assert {k: tests["after"][k] for k in ("tests", "passed", "failed")} == {"tests": 6, "passed": 6, "failed": 0}
    assert doc["failures"]["before"] == [
        {"test": REPEATED, "status": "failed", "message": "Failed asserting that 3 is identical to 2."}
    ]
    assert doc["failures"]["after"] == []
    assert doc["probe"]["frontEnd"]["status"] == "passed" and doc["probe"]["frontEnd"]["pluginActive"] is True
    assert (plugin / "src" / "Counter.php").read_bytes() == original  # the original is never touched
    bundle = Path(doc["bundleDir"])
    assert "preg_split" in (bundle / "files/patch.diff").read_text()
    # the bundle's copy is the document without the command's four keys, valid against the generated schema
    written = json.loads((bundle / "files/evaluate-patch.json").read_text())
    assert written == {k: v for k, v in doc.items() if k not in ("success", "runDir", "bundleDir", "bundleId")}
    schema = json.loads((REPO / "codebox_tui/contracts/schemas/patch-evaluation.v1.json").read_text())
    jsonschema.validate(written, schema)
    results = json.loads((bundle / "files/test-results.json").read_text())
    assert [s.get("phase") for s in results["suites"]] == ["before", "after"]
    failed = [c for c in results["suites"][0]["cases"] if c["status"] == "failed"]
    assert [c["message"] for c in failed] == ["Failed asserting that 3 is identical to 2."]
    # the suite ran with the core test library, mounted read-only, on the SQLite test site
    output = (bundle / "files/phpunit/1/output.txt").read_text()
    assert "Installing..." in output and "Tests: 6, Assertions:" in output
    commands = [json.loads(line) for line in (bundle / "commands.jsonl").read_text().splitlines()]
    phpunit = [c for c in commands if c["command"] == "wordpress.phpunit"]
    assert len(phpunit) == 2
    assert phpunit[0]["result"]["json"]["wordpress"] == "tests-lib"
    assert phpunit[0]["result"]["json"]["toolchain"]["WP_TESTS_DIR"] == "/codebox-wp-tests-lib"
    # tests counted as they finished, from PHPUnit's TeamCity log read while the suite ran (a display hint):
    # the events rose through intermediate counts on each side, and the progress lines said them
    events = [json.loads(line) for line in (Path(doc["runDir"]) / "events.jsonl").read_text().splitlines()]
    counts = [
        (e["data"]["suite"], e["data"]["done"], e["data"]["total"]) for e in events if e["type"] == "tests.progress"
    ]
    assert [c for c in counts if c[0] == "wordpress.phpunit"] == [("wordpress.phpunit", n, 6) for n in range(7)]
    assert [c for c in counts if c[0] == "wordpress.phpunit:2"] == [("wordpress.phpunit:2", n, 6) for n in range(7)]
    lines = [line.split("] ", 1)[1] for line in proc.stderr.splitlines() if line.startswith("codebox evaluate-patch")]
    assert "tests: before 3/6, 1 failed" in lines and "tests: before 6/6, 1 failed" in lines
    assert "tests: after 4/6" in lines
    assert "##teamcity" not in output  # the log is read, not kept as the suite's output


def test_breaking_patch_is_a_regression_counting_broken_and_still_failing(
    codebox_home: Path, tmp_path: Path, toolchains: tuple[Path, Path]
) -> None:
    plugin = _copy(tmp_path)
    proc = _evaluate(
        tmp_path,
        codebox_home,
        plugin,
        PATCHES / "word-stats-breaks-shortcode.patch",
        *_with_toolchain(*toolchains),
        json_out=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    out = proc.stdout
    assert "verdict: regression" in out
    assert "fixed 0, broken 1, still failing 1" in out
    # the broken test is named as the regression; nothing claims a proof
    assert f"  regression {SHORTCODE}: passed before the patch, fails after it" in out.splitlines()
    assert "proved by" not in out
    assert "before 5/6 passed, 1 failed" in out and "after  4/6 passed, 2 failed" in out
    assert f"✘ {REPEATED}: Failed asserting that 3 is identical to 2." in out
    assert f"✘ {SHORTCODE}: Failed asserting that two strings are identical." in out
    assert "+'<span class=\"word-count\">2 word(s)</span>'" in out  # the diff of the assertion is kept


def test_wp_phpunit_from_vendor_and_a_patch_that_breaks_loading(
    codebox_home: Path, tmp_path: Path, toolchains: tuple[Path, Path]
) -> None:
    """The library and the polyfills come from the plugin's Composer vendor/ (as `composer install` leaves
    them; copied into this test's scratch plugin only); the patch makes the plugin fatal on load."""
    lib, polyfills = toolchains
    plugin = _copy(tmp_path)
    shutil.copytree(lib, plugin / "vendor" / "wp-phpunit" / "wp-phpunit")
    shutil.copytree(polyfills, plugin / "vendor" / "yoast" / "phpunit-polyfills")
    proc = _evaluate(tmp_path, codebox_home, plugin, PATCHES / "word-stats-fatal.patch")
    doc = _doc(proc)
    assert proc.returncode == 1 and doc["success"] is False
    tests = doc["tests"]
    assert tests["verdict"] == "plugin-broken"
    assert 'Class "Word_Stats\\Settings" not found' in tests["reason"]
    assert doc["pluginLoad"]["before"] is None and "fails to load (after)" in doc["pluginLoad"]["after"]
    assert tests["before"]["tests"] == 6 and tests["before"]["failed"] == 1  # vendor toolchain ran the suite
    bundle = Path(doc["bundleDir"])
    commands = [json.loads(line) for line in (bundle / "commands.jsonl").read_text().splitlines()]
    first = next(c for c in commands if c["command"] == "wordpress.phpunit")
    assert (
        first["result"]["json"]["toolchain"]["WP_TESTS_DIR"]
        == "/wordpress/wp-content/plugins/word-stats/vendor/wp-phpunit/wp-phpunit"
    )
    front = doc["probe"]["frontEnd"]
    assert front["status"] == "failed" and any("Fatal error" in p for p in front["problems"])


def test_plugin_without_its_vendor_folder_is_plugin_broken(
    codebox_home: Path, tmp_path: Path, toolchains: tuple[Path, Path]
) -> None:
    plugin = _copy(tmp_path, vendor=False)
    proc = _evaluate(tmp_path, codebox_home, plugin, PATCHES / "word-stats-fix.patch", *_with_toolchain(*toolchains))
    doc = _doc(proc)
    assert proc.returncode == 1 and doc["success"] is False
    assert doc["tests"]["verdict"] == "plugin-broken"
    assert "fails to activate (before)" in doc["tests"]["reason"] or "fails to load (before)" in doc["tests"]["reason"]
    assert "vendor/autoload.php" in doc["tests"]["reason"]


def test_activation_failure_is_plugin_broken(codebox_home: Path, tmp_path: Path, toolchains: tuple[Path, Path]) -> None:
    plugin = tmp_path / "needs-setup"
    (plugin / "tests").mkdir(parents=True)
    (plugin / "needs-setup.php").write_text(
        "<?php\n/**\n * Plugin Name: Needs Setup\n */\n\nfunction needs_setup_answer() {\n\treturn 41;\n}\n\n"
        "register_activation_hook(\n\t__FILE__,\n\tfunction () {\n"
        "\t\tthrow new RuntimeException( 'Needs Setup cannot be activated: missing table needs_setup_log' );\n"
        "\t}\n);\n"
    )
    shutil.copy(PLUGIN / "tests" / "bootstrap.php", plugin / "tests" / "bootstrap.php")
    (plugin / "tests" / "bootstrap.php").write_text(
        (plugin / "tests" / "bootstrap.php").read_text().replace("/word-stats.php", "/needs-setup.php")
    )
    shutil.copy(PLUGIN / "phpunit.xml.dist", plugin / "phpunit.xml.dist")
    (plugin / "tests" / "test-answer.php").write_text(
        "<?php\nclass Test_Answer extends WP_UnitTestCase {\n\tpublic function test_answer() {\n"
        "\t\t$this->assertSame( 42, needs_setup_answer() );\n\t}\n}\n"
    )
    source = (plugin / "needs-setup.php").read_text()
    patch = _patch(tmp_path / "answer.patch", "needs-setup.php", source, source.replace("41", "42"))
    proc = _evaluate(tmp_path, codebox_home, plugin, patch, *_with_toolchain(*toolchains))
    doc = _doc(proc)
    assert proc.returncode == 1 and doc["success"] is False
    tests = doc["tests"]
    assert tests["verdict"] == "plugin-broken", tests
    assert "Needs Setup cannot be activated: missing table needs_setup_log" in tests["reason"]
    assert tests["fixed"] == ["Test_Answer::test_answer"]  # the tests ran; the verdict still says broken


def test_suite_whose_toolchain_is_missing_is_untested_and_says_where_it_looked(
    codebox_home: Path, tmp_path: Path
) -> None:
    plugin = _copy(tmp_path)
    proc = _evaluate(tmp_path, codebox_home, plugin, PATCHES / "word-stats-fix.patch")
    doc = _doc(proc)
    assert proc.returncode == 1 and doc["success"] is False
    tests = doc["tests"]
    assert tests["verdict"] == "untested"
    reason = tests["reason"]
    for place in ("--wp-tests-lib", "WP_TESTS_DIR", "vendor/wp-phpunit/wp-phpunit", "/tmp/wordpress-tests-lib"):
        assert place in reason, reason


def test_plugin_without_tests_is_untested(codebox_home: Path, tmp_path: Path) -> None:
    plugin = tmp_path / "no-tests"
    plugin.mkdir()
    (plugin / "no-tests.php").write_text(
        "<?php\n/**\n * Plugin Name: No Tests\n */\n\nfunction no_tests_greeting() {\n\treturn 'Hi';\n}\n"
    )
    source = (plugin / "no-tests.php").read_text()
    patch = _patch(tmp_path / "greeting.patch", "no-tests.php", source, source.replace("'Hi'", "'Hello'"))
    proc = _evaluate(tmp_path, codebox_home, plugin, patch, json_out=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-2000:]
    assert "verdict: untested (no-tests has no PHPUnit configuration" in proc.stdout
    assert "before no tests ran" in proc.stdout and "after  no tests ran" in proc.stdout


def test_front_end_warning_from_the_plugin_fails_the_probe(
    codebox_home: Path, tmp_path: Path, toolchains: tuple[Path, Path]
) -> None:
    """The fix plus a PHP warning on every front-end request: the tests improve, but the probe finds the
    warning in the plugin's file, so the run is not a success (exit 1)."""
    plugin = _copy(tmp_path)
    fixed = tmp_path / "fixed"
    shutil.copytree(plugin, fixed)
    subprocess.run(["git", "apply", str(PATCHES / "word-stats-fix.patch")], cwd=fixed, check=True)
    source = (fixed / "word-stats.php").read_text()
    warned = source.replace(
        "add_action( 'rest_api_init', 'word_stats_register_routes' );",
        "add_action( 'rest_api_init', 'word_stats_register_routes' );\n"
        "add_action(\n\t'wp_head',\n\tfunction () {\n\t\techo $word_stats_label;\n\t}\n);",
    )
    assert warned != source
    counter_patch = (PATCHES / "word-stats-fix.patch").read_text()
    patch = _patch(tmp_path / "warning.patch", "word-stats.php", (plugin / "word-stats.php").read_text(), warned)
    patch.write_text(counter_patch + patch.read_text())
    proc = _evaluate(tmp_path, codebox_home, plugin, patch, *_with_toolchain(*toolchains))
    doc = _doc(proc)
    assert doc["tests"]["verdict"] == "improvement"
    front = doc["probe"]["frontEnd"]
    assert front["status"] == "failed" and "fatal" not in front
    assert any(
        p.startswith(
            "Warning: Undefined variable $word_stats_label in /wordpress/wp-content/plugins/word-stats/word-stats.php:"
        )
        for p in front["problems"]
    ), front
    assert proc.returncode == 1 and doc["success"] is False


def test_wordpress_phpunit_command_with_filter_test_file_and_bootstrap(
    tmp_path: Path, toolchains: tuple[Path, Path]
) -> None:
    """`wordpress.phpunit` itself: --filter, a single test file and an explicit bootstrap reach PHPUnit.
    Every run starts on a fresh test site in its own database file: installed by the first run, put back
    as that install's copy for the next (what a suite left behind is gone), never in the site's database."""
    from codebox_tui.runtime.phpunit import phpunit_tool_mounts

    lib, polyfills = toolchains
    plugin = _copy(tmp_path)
    with native_run(
        tmp_path / "artifacts",
        mounts=[f"{plugin}:/wordpress/wp-content/plugins/word-stats"],
        commands=["wordpress.run-php", "wordpress.phpunit"],
        extra_mounts=phpunit_tool_mounts(tmp_path / "bin", wp_tests_lib=lib, phpunit_polyfills=polyfills),
    ) as run:
        filtered = run.execute("wordpress.phpunit", ["plugin-slug=word-stats", "filter=test_rest_route"], timeout_s=600)
        summary = filtered.result.json_
        assert filtered.exitCode == 0, filtered.stdout[-2000:]
        assert (summary["tests"], summary["passed"], summary["wordpress"]) == (2, 2, "tests-lib")
        assert filtered.stdout.count("Installing...") == 1 and "Test site restored" not in filtered.stdout
        # what a suite could leave behind (committed outside its transaction), planted in the test site's file
        planted = run.execute(
            "wordpress.run-php",
            [
                "code=" + LEFTOVER_PHP % "INSERT INTO wptests_options (option_name, "
                "option_value, autoload) VALUES ('codebox_leftover', '1', 'yes')"
            ],
        )
        assert planted.stdout.endswith("1"), planted.stdout
        single = run.execute(
            "wordpress.phpunit",
            [
                "plugin-slug=word-stats",
                "test-file=tests/test-word-stats.php",
                "bootstrap=tests/bootstrap.php",
                "wordpress=tests-lib",
            ],
            timeout_s=600,
        )
        assert single.exitCode == 1, single.stdout[-3000:]
        assert single.result.json_["tests"] == 6 and single.result.json_["failed"] == 1, single.stdout[-3000:]
        assert "Installing..." not in single.stdout and single.stdout.count("Test site restored") == 1
        left = run.execute(
            "wordpress.run-php",
            ["code=" + LEFTOVER_PHP % "SELECT COUNT(*) FROM wptests_options WHERE option_name = 'codebox_leftover'"],
        )
        assert left.stdout.endswith("0"), left.stdout
        site = run.execute(
            "wordpress.run-php",
            [
                'code=global $wpdb; echo count($wpdb->get_col("SHOW TABLES LIKE '
                "'wptests%'\")), ' ', $wpdb->get_var(\"SELECT COUNT(*) FROM "
                "{$wpdb->options}\") > 0 ? 'site' : 'empty';"
            ],
        )
        assert site.stdout.endswith("0 site"), site.stdout  # the site's own database never held the test site
        assert [c["message"] for c in single.result.json_["cases"] if c["status"] == "failed"] == [
            "Failed asserting that 3 is identical to 2."
        ]
        assert run.runtime_info().backend == "native"


def test_patch_changing_nothing_tested_is_neutral(
    codebox_home: Path, tmp_path: Path, toolchains: tuple[Path, Path]
) -> None:
    """Tests ran on both sides and nothing changed: neutral, exit 0. The patch adds a file in a new folder,
    which reaches the sandbox and the bundle's patch."""
    plugin = _copy(tmp_path)
    patch = _patch(tmp_path / "readme.patch", "docs/notes/README.md", "", "# Word Stats\n\nNotes.\n")
    text = patch.read_text().replace("--- a/docs/notes/README.md", "--- /dev/null", 1)
    patch.write_text("diff --git a/docs/notes/README.md b/docs/notes/README.md\nnew file mode 100644\n" + text)
    proc = _evaluate(tmp_path, codebox_home, plugin, patch, *_with_toolchain(*toolchains))
    doc = _doc(proc)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert doc["success"] is True and doc["tests"]["verdict"] == "neutral"
    assert doc["tests"]["stillFailing"] == [REPEATED] and doc["tests"]["fixed"] == []
    assert "docs/notes/README.md" in (Path(doc["bundleDir"]) / "files/patch.diff").read_text()
