"""Recipe verdicts (bundle/checks.py) and what a bundle says about its checks (bundle/results.py):
pure logic over recorded results, so plain data in, plain data out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codebox_tui.bundle.checks import (
    MAX_SHOWN,
    error_message,
    failed_probes,
    probe_message,
    recipe_verdict,
    short_json,
    verdict_lines,
    with_message,
)
from codebox_tui.bundle.results import bundle_checks, side_totals


def _probe(name: str, status: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "command": "wordpress.run-php", "allowFailure": False, "status": status, **extra}


def test_a_failed_advisory_step_is_a_warning_with_its_message_and_the_run_passes() -> None:
    advisory = {
        "phase": "steps",
        "index": 1,
        "command": "wordpress.browser-actions",
        "error": "step 1 (expect): expected '.word-count' to have text '2', got '3'\n",
    }
    verdict = recipe_verdict([], [advisory], [], [{"phase": "steps", "index": 0, "command": "x", "exitCode": 0}])
    assert verdict.status == "passed" and verdict.passed and verdict.failures == []
    assert verdict.warnings == [
        {
            "kind": "advisory",
            "what": "workflow.steps[1] (wordpress.browser-actions)",
            "message": "step 1 (expect): expected '.word-count' to have text '2', got '3'",
        }
    ]
    assert verdict_lines(verdict) == [
        "warning workflow.steps[1] (wordpress.browser-actions): step 1 (expect): "
        "expected '.word-count' to have text '2', got '3'"
    ]


def test_any_non_advisory_failure_fails_the_run() -> None:
    failure = {"phase": "before", "index": 0, "command": "wordpress.run-php", "error": "PHP Fatal error: boom"}
    verdict = recipe_verdict([failure], [{"phase": "steps", "index": 2, "command": "y", "error": "soft"}])
    assert verdict.status == "failed"
    assert verdict.failures[0]["what"] == "workflow.before[0] (wordpress.run-php)"
    assert verdict.failures[0]["message"] == "PHP Fatal error: boom"
    assert len(verdict.warnings) == 1  # the advisory one is still reported
    setup = recipe_verdict([{"phase": "setup", "error": {"code": "boot-failed", "message": "boot timed out"}}])
    assert setup.failures == [{"kind": "failure", "what": "setup", "message": "boot timed out"}]
    artifact = recipe_verdict([{"phase": "collect_artifacts", "artifact": "log", "error": "missing"}])
    assert artifact.status == "failed" and artifact.failures[0]["what"] == "artifact 'log'"


def test_a_failed_probe_names_the_probe_the_expected_json_and_what_came_back() -> None:
    probe = _probe(
        "plugin-active",
        "failed",
        expectJson={"active": True},
        actualJson={"active": False},
        exitCode=0,
        error="the probe's JSON does not contain expectJson",
    )
    records = failed_probes([probe])
    assert records[0]["probe"] == "plugin-active" and records[0]["expected"] == {"active": True}
    assert records[0]["actual"] == {"active": False}
    verdict = recipe_verdict(records, [], [probe])
    assert verdict.status == "failed"
    assert verdict.failures == [
        {
            "kind": "probe",
            "what": "probe 'plugin-active'",
            "message": 'expected JSON containing {"active": true}, got {"active": false}',
            "expected": '{"active": true}',
            "actual": '{"active": false}',
        }
    ]
    assert with_message(probe)["message"] == verdict.failures[0]["message"]
    assert "message" not in with_message(_probe("ok", "passed"))


def test_a_failed_probe_missing_from_the_failure_list_still_fails_the_run() -> None:
    probe = _probe("note", "failed", exitCode=3, error="exit 3")
    verdict = recipe_verdict([], [], [probe])
    assert verdict.status == "failed" and verdict.failures[0]["what"] == "probe 'note'"
    assert verdict.failures[0]["message"] == "exited with code 3: exit 3"


def test_allow_failure_probes_and_steps_are_warnings() -> None:
    soft = {**_probe("soft", "failed", exitCode=3, error="nope"), "allowFailure": True}
    step = {"phase": "after", "index": 0, "command": "wordpress.run-php", "exitCode": 2, "allowFailure": True}
    passing = {"phase": "steps", "index": 0, "command": "wordpress.run-php", "exitCode": 0, "allowFailure": True}
    verdict = recipe_verdict(failed_probes([soft]), [], [soft], [step, passing])
    assert verdict.status == "passed"
    assert [(w["kind"], w["what"], w["message"]) for w in verdict.warnings] == [
        ("allowed-failure", "workflow.after[0] (wordpress.run-php)", "exited with code 2"),
        ("allowed-probe-failure", "probe 'soft'", "exited with code 3: nope"),
    ]


def test_probe_values_are_shortened_and_terminal_safe() -> None:
    hostile = {"bidi": "\u202e", "html": "\x1b[2J\x1b]0;owned\x07" + "x" * 5000}
    probe = _probe("evil\x1b[31m", "failed", exitCode=0, expectJson={"html": "<p>"}, actualJson=hostile)
    message = probe_message(probe)
    assert "\x1b" not in message and "\x07" not in message and "\u202e" not in message
    assert "\\u001b[2J" in message and "\\u202e" in message and "more characters)" in message
    assert len(message) < 2 * MAX_SHOWN + 100
    verdict = recipe_verdict([], [], [probe])
    assert verdict.failures[0]["what"] == "probe 'evil\\x1b[31m'"
    assert "\x1b" not in json.dumps(verdict.to_dict(), ensure_ascii=False)
    assert short_json("a" * 10, limit=4) == '"aaa… (8 more characters)'


def test_error_messages_pick_the_php_error_line_over_its_stack_trace() -> None:
    output = (
        '<br />\n<b>Fatal error</b>:  Uncaught Error: Undefined constant "STDERR" in /tmp/x.php:2\n'
        "Stack trace:\n#0 /internal/eval.php(4): require()\n#1 {main}\n  thrown in <b>/tmp/x.php</b> on line "
        "<b>2</b><br />\n"
    )
    assert error_message(output) == 'Fatal error:  Uncaught Error: Undefined constant "STDERR" in /tmp/x.php:2'
    assert error_message("one\ntwo\nthree\nfour\n") == "two ⏎ three ⏎ four"
    assert (
        error_message({"code": "timeout", "message": "the step timed out after 5 s"}) == "the step timed out after 5 s"
    )
    assert error_message(None) == "failed (no message)"


def test_a_probe_that_printed_no_json_shows_what_it_printed() -> None:
    probe = _probe(
        "shape",
        "failed",
        exitCode=0,
        expectJson={"ok": True},
        actualOutput="Warning: oops\n",
        error="expectJson is set but the probe printed no JSON",
    )
    assert probe_message(probe) == 'printed no JSON: "Warning: oops\\n" (expected JSON containing {"ok": true})'


def test_test_sides_per_side_for_a_patch_and_one_side_otherwise() -> None:
    suites = [
        {"name": "s:before", "phase": "before", "status": "failed", "tests": 2, "passed": 1, "failed": 1},
        {"name": "s:after", "phase": "after", "status": "passed", "tests": 2, "passed": 2, "failed": 0},
    ]
    results = {"status": "unknown", "summary": {"total": 4, "passed": 3, "failed": 1}, "suites": suites}
    before, after = side_totals(results)
    assert (before.side, before.status, before.total, before.passed, before.failed) == ("before", "failed", 2, 1, 1)
    assert (after.side, after.status, after.passed) == ("after", "passed", 2)
    assert after.line() == "after  passed — 2 passed, 0 failed of 2"
    evaluation = {
        "tests": {
            "verdict": "improvement",
            "before": {"status": "failed", "tests": 3, "passed": 2, "failed": 1, "skipped": 0},
            "after": None,
        }
    }
    sides = side_totals({}, evaluation)
    assert [(s.side, s.total, s.status) for s in sides] == [("before", 3, "failed"), ("after", 0, "not run")]
    assert sides[1].line() == "after  no tests ran"
    plain = side_totals({"status": "passed", "summary": {"total": 5, "passed": 5}, "suites": [{"name": "x"}]})
    assert [(s.side, s.total, s.status) for s in plain] == [("all", 5, "passed")]
    assert side_totals({"status": "unknown", "summary": {"total": 0}, "suites": []}) == []


def _write(root: Path, rel: str, doc: Any) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))


def test_bundle_checks_of_a_recipe_bundle(tmp_path: Path) -> None:
    probes = [_probe("a", "passed"), _probe("b", "failed", exitCode=0, expectJson={"x": 1}, actualJson={"x": 2})]
    _write(tmp_path, "files/probes.json", {"schema": "wp-codebox/recipe-probes/v1", "probes": probes})
    _write(
        tmp_path,
        "files/run-attestation.json",
        {
            "stepFailures": failed_probes(probes),
            "advisoryFailures": [{"phase": "steps", "index": 0, "command": "c", "error": "advisory says no"}],
            "executions": [],
            "probes": probes,
        },
    )
    checks = bundle_checks(tmp_path, {})
    assert checks.kind == "recipe-run" and checks.problems == []
    assert [(p.name, p.status, p.expected, p.actual) for p in checks.probes] == [
        ("a", "passed", None, None),
        ("b", "failed", '{"x": 1}', '{"x": 2}'),
    ]
    assert checks.verdict is not None and checks.verdict.status == "failed"
    rows = checks.lines()
    assert ("tests", "unknown (no test-aware command ran)") in rows
    assert ("FAILED", 'probe \'b\': expected JSON containing {"x": 1}, got {"x": 2}') in rows
    assert ("warning", "workflow.steps[0] (c): advisory says no") in rows
    assert json.loads(json.dumps(checks.to_dict()))["verdict"]["status"] == "failed"


def test_bundle_checks_of_an_evaluate_patch_and_a_plain_bundle(tmp_path: Path) -> None:
    _write(
        tmp_path / "ep",
        "files/evaluate-patch.json",
        {
            "tests": {
                "verdict": "regression",
                "before": {"status": "passed", "tests": 1, "passed": 1, "failed": 0, "skipped": 0},
                "after": {"status": "failed", "tests": 1, "passed": 0, "failed": 1, "skipped": 0},
            },
            "probe": {"status": "failed", "frontEnd": {"url": "/", "status": "failed", "problems": ["HTTP 500"]}},
        },
    )
    checks = bundle_checks(tmp_path / "ep", {"status": "unknown", "summary": {"total": 0}})
    assert checks.kind == "evaluate-patch" and checks.patch_verdict == "regression"
    assert [t.side for t in checks.tests] == ["before", "after"]
    assert [(p.name, p.status, p.message) for p in checks.probes] == [("front end /", "failed", "HTTP 500")]
    assert not any("unknown" in text for label, text in checks.lines() if label == "tests")
    (tmp_path / "plain").mkdir()
    plain = bundle_checks(tmp_path / "plain", {"status": "passed", "summary": {"total": 2, "passed": 2}})
    assert plain.kind == "run" and plain.verdict is None and plain.probes == []
    assert plain.lines() == [("tests", "passed — 2 passed, 0 failed of 2"), ("probes", "none")]


def test_unreadable_or_hostile_check_files_are_problems_never_crashes(tmp_path: Path) -> None:
    _write(tmp_path, "files/probes.json", "{not json")
    (tmp_path / "files" / "run-attestation.json").symlink_to("/etc/hostname")
    _write(tmp_path, "files/evaluate-patch.json", ["not", "an", "object"])
    checks = bundle_checks(tmp_path, {})
    assert checks.kind == "run" and checks.probes == [] and checks.verdict is None
    assert len(checks.problems) == 3
    assert "files/evaluate-patch.json is not a JSON object" in checks.problems
    _write(tmp_path / "odd", "files/probes.json", {"probes": [1, None, {"name": 7, "status": ["x"]}]})
    odd = bundle_checks(tmp_path / "odd", {})
    assert [(p.name, p.status) for p in odd.probes] == [("7", "['x']")]


def test_artifacts_show_on_an_imported_reference_bundle_shows_tests_and_probes(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.factories.reference_bundle import write_reference_bundle

    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir()
    after.mkdir()
    (before / "a.php").write_text("<?php\n// one\n")
    (after / "a.php").write_text("<?php\n// two\n")
    bundle = tmp_path / "bundle"
    write_reference_bundle(bundle, before, after, target="/wordpress/wp-content/plugins/p")

    def show(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "codebox_tui", "artifacts", "show", str(bundle), *extra],
            capture_output=True,
            text=True,
            timeout=120,
        )

    lines = show().stdout.splitlines()
    assert "tests    unknown (no test-aware command ran)" in lines and "probes   none" in lines
    probes = [_probe("ref-probe", "failed", exitCode=0, expectJson={"a": 1}, actualJson={"a": 0})]
    _write(bundle, "files/probes.json", {"schema": "wp-codebox/recipe-probes/v1", "probes": probes})
    lines = show().stdout.splitlines()  # not in the manifest: verification says so, show still reads it
    assert 'probe    ✘ ref-probe: failed — expected JSON containing {"a": 1}, got {"a": 0}' in lines
    assert json.loads(show("--json").stdout)["checks"]["probes"][0]["name"] == "ref-probe"
