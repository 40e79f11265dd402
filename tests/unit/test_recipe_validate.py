"""Recipe contract, validation (all issues at once, JSON paths), dry-run plan and CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codebox_tui.contracts.recipe import RECIPE_SCHEMA, recipe_json_schema
from codebox_tui.recipes.blueprint import validate_blueprint_document
from codebox_tui.recipes.plan import dry_run
from codebox_tui.recipes.run import recipe_request
from codebox_tui.recipes.validate import validate_recipe_document, validate_recipe_file
from codebox_tui.settings import reload_settings


def _recipe(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema": RECIPE_SCHEMA,
        "workflow": {"steps": [{"command": "wordpress.run-php", "args": ["code=echo 1;"]}]},
    }
    doc.update(over)
    return doc


def _codes(result: Any) -> list[tuple[str, str]]:
    return [(i.code, i.path) for i in result.issues]


def test_generated_schema_is_draft_2020_12_and_closed() -> None:
    schema = recipe_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"schema", "workflow"}
    for name, definition in schema["$defs"].items():
        if definition.get("type") == "object" and "properties" in definition:
            assert definition.get("additionalProperties") is False, name


def test_minimal_recipe_is_valid_and_derives_policy(tmp_path: Path) -> None:
    result = validate_recipe_document(_recipe(), base_dir=tmp_path)
    assert result.valid, result.issues
    assert result.policy is not None
    assert result.policy.commands == ["inspect-mounted-inputs", "wordpress.run-php"]
    assert result.policy.network == "deny"


def test_all_schema_errors_reported_at_once_with_paths(tmp_path: Path) -> None:
    doc = _recipe(
        inputs={"extraPlugins": [], "mounts": [{"source": "x", "target": "relative", "mode": "rw"}]},
        workflow={"steps": [{"command": "wordpress.run-php", "timeoutMs": 0}, {"args": []}]},
        runtime={"phpVersion": "eight"},
    )
    result = validate_recipe_document(doc, base_dir=tmp_path)
    paths = {i.path for i in result.issues}
    assert "$.inputs.extraPlugins" in paths
    assert "$.inputs.mounts[0].target" in paths
    assert "$.inputs.mounts[0].mode" in paths
    assert "$.workflow.steps[0].timeoutMs" in paths
    assert "$.workflow.steps[1].command" in paths
    assert "$.runtime.phpVersion" in paths
    extra = next(i for i in result.issues if i.path == "$.inputs.extraPlugins")
    assert "extra_plugins" in extra.message
    mode = next(i for i in result.issues if i.path == "$.inputs.mounts[0].mode")
    assert "'readonly'" in mode.message and "'rw'" in mode.message


def test_wrong_schema_const_and_empty_steps(tmp_path: Path) -> None:
    result = validate_recipe_document({"schema": "x", "workflow": {"steps": []}}, base_dir=tmp_path)
    assert ("invalid-value", "$.schema") in _codes(result)
    assert ("out-of-range", "$.workflow.steps") in _codes(result)


def test_semantic_checks(tmp_path: Path) -> None:
    (tmp_path / "plugin").mkdir()
    (tmp_path / "afile.txt").write_text("x")
    doc = _recipe(
        inputs={
            "mounts": [
                {"source": "plugin", "target": "/wordpress/wp-content/plugins/p"},
                {"source": "missing", "target": "/wordpress/wp-content/plugins/q"},
                {"source": "afile.txt", "target": "/wordpress/wp-content/plugins/p/"},
                {"source": "plugin", "target": "/a/../etc"},
            ],
            "workspaces": [
                {"seed": {"type": "plugin_scaffold"}},
                {"seed": {"type": "directory", "slug": "d", "source": "nope"}},
            ],
            "extra_plugins": [{"source": "https://example.org/p.zip"}, {"source": "gone"}],
            "secretEnv": ["lower"],
            "siteSeeds": [
                {"name": "s1", "scopes": {}},
                {
                    "name": "s2",
                    "type": "parent_site",
                    "source": "x.json",
                    "scopes": {"options": {}, "users": {"anonymize": False}, "posts": {}},
                },
            ],
        },
        workflow={
            "steps": [
                {"command": "nope.command"},
                {"command": "wordpress.browser-probe", "args": ["url=/", "viewport=big", "capture=console,bogus"]},
                {"command": "wordpress.phpunit", "args": []},
                {"command": "wordpress.run-php", "args": ["oops"]},
                {"command": "wordpress.browser-actions", "args": ["steps-json=[not json"]},
            ]
        },
    )
    codes = _codes(validate_recipe_document(doc, base_dir=tmp_path, allow_downloads=False))
    expected = {
        ("missing-source", "$.inputs.mounts[1].source"),
        ("invalid-source", "$.inputs.mounts[2].source"),
        ("duplicate-mount-target", "$.inputs.mounts[2].target"),
        ("invalid-sandbox-path", "$.inputs.mounts[3].target"),
        ("invalid-slug", "$.inputs.workspaces[0].seed.slug"),
        ("missing-source", "$.inputs.workspaces[1].seed.source"),
        ("network-download-refused", "$.inputs.extra_plugins[0].source"),
        ("missing-source", "$.inputs.extra_plugins[1].source"),
        ("invalid-secret-env", "$.inputs.secretEnv[0]"),
        ("missing-site-seed-scopes", "$.inputs.siteSeeds[0].scopes"),
        ("missing-source", "$.inputs.siteSeeds[0].source"),
        ("invalid-site-seed-source", "$.inputs.siteSeeds[1].source"),
        ("unbounded-site-seed-options", "$.inputs.siteSeeds[1].scopes.options.names"),
        ("unsafe-site-seed-users", "$.inputs.siteSeeds[1].scopes.users.anonymize"),
        ("unbounded-site-seed-scope", "$.inputs.siteSeeds[1].scopes.posts"),
        ("unsupported-command", "$.workflow.steps[0].command"),
        ("invalid-arg", "$.workflow.steps[1].args.viewport"),
        ("invalid-arg", "$.workflow.steps[1].args.capture"),
        ("missing-arg", "$.workflow.steps[2].args"),
        ("invalid-arg", "$.workflow.steps[3].args[0]"),
        ("invalid-arg", "$.workflow.steps[4].args.steps-json"),
    }
    assert expected <= set(codes), sorted(expected - set(codes))


def test_url_source_allowed_only_with_opt_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = _recipe(inputs={"extra_plugins": [{"source": "https://example.org/p.zip"}]})
    refused = validate_recipe_document(doc, base_dir=tmp_path, allow_downloads=False)
    assert [i.code for i in refused.issues] == ["network-download-refused"]
    assert "CODEBOX_ALLOW_NETWORK_DOWNLOADS=1" in refused.issues[0].message
    allowed = validate_recipe_document(doc, base_dir=tmp_path, allow_downloads=True)
    assert allowed.valid
    http = validate_recipe_document(
        _recipe(inputs={"extra_plugins": [{"source": "http://x/p.zip"}]}), base_dir=tmp_path, allow_downloads=True
    )
    assert [i.code for i in http.issues] == ["invalid-source"]
    try:  # the default comes from the setting
        monkeypatch.setenv("CODEBOX_ALLOW_NETWORK_DOWNLOADS", "1")
        reload_settings()
        assert validate_recipe_document(doc, base_dir=tmp_path).valid
        monkeypatch.setenv("CODEBOX_ALLOW_NETWORK_DOWNLOADS", "0")
        reload_settings()
        assert not validate_recipe_document(doc, base_dir=tmp_path).valid
    finally:
        monkeypatch.undo()
        reload_settings()


def test_explicit_policy_must_cover_workflow(tmp_path: Path) -> None:
    steps = [
        {"command": "wordpress.phpunit", "args": ["plugin-slug=p"]},
        {"command": "wordpress.browser-actions", "args": ['steps-json=[{"action":"evaluate","script":"1"}]']},
    ]
    doc = _recipe(runtime={"policy": {"commands": ["wordpress.phpunit"]}}, workflow={"steps": steps})
    result = validate_recipe_document(doc, base_dir=tmp_path)
    issue = next(i for i in result.issues if i.code == "runtime-policy-missing-command")
    assert issue.path == "$.runtime.policy.commands"
    for cmd in ("wordpress.run-php", "wordpress.browser-actions", "wordpress.browser-actions.evaluate"):
        assert cmd in issue.message


def test_bad_json_file_is_single_invalid_recipe_issue(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text("{ nope")
    result = validate_recipe_file(path)
    assert [(i.code, i.path) for i in result.issues] == [("invalid-recipe", "$")]
    assert result.issues[0].message.startswith("Recipe JSON is invalid:")
    missing = validate_recipe_file(tmp_path / "absent.json")
    assert missing.issues[0].code == "invalid-recipe"


def test_dry_run_plan_resolves_targets_and_policy(tmp_path: Path) -> None:
    (tmp_path / "plugin").mkdir()
    doc = _recipe(
        inputs={
            "mounts": [{"source": "plugin", "target": "/wordpress/wp-content/plugins/plugin", "mode": "readonly"}],
            "workspaces": [{"seed": {"type": "plugin_scaffold", "slug": "demo"}}],
            "extra_plugins": [{"source": "plugin", "loadAs": "mu-plugin"}],
            "secretEnv": ["API_TOKEN"],
        }
    )
    validation = validate_recipe_document(doc, base_dir=tmp_path, allow_downloads=False)
    plan = dry_run(validation, tmp_path, env={"API_TOKEN": "s3cret"})["plan"]
    assert plan["mounts"][0]["source"] == str((tmp_path / "plugin").resolve())
    assert plan["workspaces"][0]["target"] == "/wordpress/wp-content/plugins/demo"
    assert plan["extra_plugins"][0]["target"].startswith("/wordpress/wp-content/mu-plugins/")
    assert plan["secretEnv"] == [{"name": "API_TOKEN", "available": True, "status": "available"}]
    assert "s3cret" not in json.dumps(plan)
    assert plan["policy"]["secrets"] == ["API_TOKEN"]
    assert len(plan["policy"]["hash"]) == 64
    assert plan["workflow"]["steps"][0]["policy"]["status"] == "allowed"


def test_blueprint_validation() -> None:
    assert validate_blueprint_document({"steps": [{"step": "login"}], "landingPage": "/wp-admin/"}) == []
    issues = validate_blueprint_document(
        {"steps": [{"step": "nope"}, {"x": 1}], "bad": 1, "plugins": [{"resource": "url", "url": "https://x"}]}
    )
    paths = {i["path"] for i in issues}
    assert {"$", "$.steps[0]", "$.steps[1]", "$.plugins[0]"} <= paths


# --- fuzzing: arbitrary JSON never crashes the validator, and invalid recipes never boot -------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=12,
)


@st.composite
def mutated_recipes(draw: st.DrawFn) -> Any:
    doc = _recipe(inputs={"mounts": [{"source": ".", "target": "/wordpress/wp-content/plugins/p"}]})
    path: list[Any] = []
    node: Any = doc
    for _ in range(draw(st.integers(0, 3))):
        if isinstance(node, dict) and node:
            key = draw(st.sampled_from(sorted(node)))
        elif isinstance(node, list) and node:
            key = draw(st.integers(0, len(node) - 1))
        else:
            break
        path.append(key)
        node = node[key]
    replacement = draw(json_values)
    if not path:
        return replacement
    parent: Any = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = replacement
    return doc


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(mutated_recipes())
def test_fuzzed_recipes_never_crash_and_issues_have_paths(tmp_path: Path, doc: Any) -> None:
    result = validate_recipe_document(doc, base_dir=tmp_path, allow_downloads=False)
    for issue in result.issues:
        assert issue.path.startswith("$") and issue.message and issue.code
    if not result.valid:
        assert dry_run(result, tmp_path).get("plan") is None


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_arbitrary_json_is_rejected_cleanly(doc: Any) -> None:
    result = validate_recipe_document(doc, base_dir=Path("/nonexistent"), allow_downloads=False)
    assert not result.valid
    assert result.issues


INVALID_RECIPES = [
    "{ not json",
    json.dumps({"schema": RECIPE_SCHEMA}),
    json.dumps(_recipe(workflow={"steps": [{"command": "nope"}]})),
    json.dumps(_recipe(inputs={"mounts": [{"source": "missing-dir", "target": "/x/y"}]})),
    json.dumps(_recipe(inputs={"extra_plugins": [{"source": "https://downloads.wordpress.org/plugin/a.zip"}]})),
    json.dumps(_recipe(inputs={"services": [{"type": "mysql", "outputs": {"host": "DB_HOST"}}]})),
    json.dumps(_recipe(distribution={"name": "d"})),
]


@pytest.mark.parametrize("text", INVALID_RECIPES)
def test_cli_recipe_run_on_invalid_recipe_boots_nothing(tmp_path: Path, text: str) -> None:
    recipe = tmp_path / "r.json"
    recipe.write_text(text)
    artifacts = tmp_path / "artifacts"
    # RunSession is poisoned in the child: any attempt to create a sandbox would exit 99.
    code = (
        "import sys, codebox_tui.runtime.session as s\n"
        "def boom(*a, **k):\n    sys.stderr.write('BOOTED'); sys.exit(99)\n"
        "s.RunSession.__init__ = boom\n"
        "from codebox_tui.cli import main\n"
        f"main(['recipe-run', {str(recipe)!r}, '--artifacts-dir', {str(artifacts)!r}, '--json'])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert proc.returncode == 2, proc.stderr
    assert "BOOTED" not in proc.stderr
    assert not artifacts.exists()
    doc = json.loads(proc.stdout)
    assert doc["valid"] is False and doc["validation"]["issues"]


def test_cli_schema_and_validate(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "codebox_tui", "schema", "recipe", "--json"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    env = json.loads(out.stdout)
    assert env["id"] == RECIPE_SCHEMA and env["jsonSchema"]["$schema"].endswith("2020-12/schema")
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps(_recipe()))
    ok = subprocess.run(
        [sys.executable, "-m", "codebox_tui", "recipe", "validate", str(recipe)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ok.returncode == 0, ok.stderr
    recipe.write_text(json.dumps(_recipe(workflow={"steps": [{"command": "nope"}]})))
    bad = subprocess.run(
        [sys.executable, "-m", "codebox_tui", "recipe", "validate", str(recipe)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2
    assert "$.workflow.steps[0].command" in bad.stderr


def test_steps_json_at_path_resolves_against_recipe_dir_for_validate_and_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codebox_tui.contracts.recipe import RecipeStep
    from codebox_tui.recipes.validate import resolved_step_args

    recipe_dir = tmp_path / "recipes"
    (recipe_dir / "steps").mkdir(parents=True)
    (recipe_dir / "steps" / "ok.json").write_text(json.dumps([{"action": "evaluate", "script": "1"}]))
    (recipe_dir / "steps" / "bad.json").write_text("[{oops")
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the recipe's directory decides, never the working directory
    step = {"command": "wordpress.browser-actions", "args": ["url=/", "steps-json=@steps/ok.json"]}
    path = recipe_dir / "r.json"
    path.write_text(json.dumps(_recipe(workflow={"steps": [step]})))
    ok = validate_recipe_file(path)
    assert ok.valid, ok.issues
    # The @file's evaluate step reaches the derived policy too.
    assert ok.policy is not None and "wordpress.browser-actions.evaluate" in ok.policy.commands
    # recipe-run hands the command the same file validate read.
    args = resolved_step_args(RecipeStep.model_validate(step), recipe_dir)
    assert args == ["url=/", f"steps-json=@{(recipe_dir / 'steps' / 'ok.json').resolve()}"]
    from codebox_tui.browser.actions import parse_steps

    assert parse_steps(args[1].split("=", 1)[1])[0]["action"] == "evaluate"

    steps = [
        {"command": "wordpress.browser-actions", "args": ["url=/", "steps-json=@steps/missing.json"]},
        {"command": "wordpress.browser-actions", "args": ["url=/", "steps-json=@steps/bad.json"]},
    ]
    path.write_text(json.dumps(_recipe(workflow={"steps": steps})))
    bad = validate_recipe_file(path)
    assert _codes(bad) == [
        ("missing-source", "$.workflow.steps[0].args.steps-json"),
        ("invalid-arg", "$.workflow.steps[1].args.steps-json"),
    ]
    assert str(recipe_dir / "steps" / "missing.json") in bad.issues[0].message
    assert "bad.json" in bad.issues[1].message and "line 1" in bad.issues[1].message


# Reference recipe fields (docs/contracts.md, "Workspace recipe") accepted with their shape but not executed here: each is a clear `unsupported-field` issue.
UNSUPPORTED_CASES: list[tuple[dict[str, Any], str]] = [
    ({"runtime": {"workers": 4}}, "$.runtime.workers"),
    ({"runtime": {"workers": "auto"}}, "$.runtime.workers"),
    ({"runtime": {"wordpressInstallMode": "do-not-attempt-installing"}}, "$.runtime.wordpressInstallMode"),
    ({"runtime": {"preview": {"port": 8080, "bind": "127.0.0.1"}}}, "$.runtime.preview.bind"),
    ({"runtime": {"preview": {"hold": "5m", "lease": {"ttl": 60}}}}, "$.runtime.preview.lease"),
    ({"runtime": {"preview": {"hold": "5m", "siteUrl": "https://site.example"}}}, "$.runtime.preview.siteUrl"),
    ({"runtime": {"assets": {"wordpressZip": "wp.zip"}}}, "$.runtime.assets"),
    ({"runtime": {"extensions": [{"manifest": "ext/manifest.json"}]}}, "$.runtime.extensions"),
    ({"runtime": {"bundledExtensions": ["intl"]}}, "$.runtime.bundledExtensions"),
    ({"runtime": {"backendPackage": "@x/backend"}}, "$.runtime.backendPackage"),
    ({"runtime": {"hostNodeHeap": {"maximumMiB": 2048}}}, "$.runtime.hostNodeHeap"),
    ({"inputs": {"services": [{"type": "mysql", "outputs": {"host": "DB_HOST"}}]}}, "$.inputs.services"),
    (
        {"inputs": {"externalServices": [{"id": "stripe", "allowedHosts": ["api.stripe.com"], "writes": "forbidden"}]}},
        "$.inputs.externalServices",
    ),
    (
        {"inputs": {"pluginRuntime": {"wpConfigDefines": {"WP_DEBUG": True}, "php": {"memoryLimit": "256M"}}}},
        "$.inputs.pluginRuntime",
    ),
    (
        {
            "inputs": {
                "fixtureDatabases": [
                    {
                        "name": "shop",
                        "source": "shop.sql",
                        "reset": {"strategy": "truncate-tables", "tables": ["wp_posts"]},
                    }
                ]
            }
        },
        "$.inputs.fixtureDatabases",
    ),
    (
        {
            "inputs": {
                "fixtureUsers": [{"name": "author", "username": "a", "role": "editor"}],
                "userSessions": [{"name": "s", "user": "author"}],
            }
        },
        "$.inputs.fixtureUsers",
    ),
    ({"inputs": {"browserActors": [{"name": "a", "userSession": "s"}]}}, "$.inputs.browserActors"),
    (
        {
            "inputs": {
                "sourcePackages": [{"name": "lib", "source": "lib", "target": "/workspace/lib", "allow": ["*.php"]}]
            }
        },
        "$.inputs.sourcePackages",
    ),
    ({"inputs": {"extra_plugins": [{"source": ".", "composer": "install"}]}}, "$.inputs.extra_plugins[0].composer"),
    ({"fuzzRun": {"schema": "wp-codebox/fuzz-run/v1", "cases": []}}, "$.fuzzRun"),
    ({"adversarialCampaigns": [{"name": "c"}]}, "$.adversarialCampaigns"),
    ({"distribution": {"name": "d", "wordpress": {"root": "/srv/wp"}}}, "$.distribution"),
    (
        {
            "workflow": {
                "steps": [
                    {
                        "command": "wordpress.run-php",
                        "args": ["code=1;"],
                        "diagnostics": {"capture": ["wpdb-queries"], "maxItems": 10},
                    }
                ]
            }
        },
        "$.workflow.steps[0].diagnostics",
    ),
    (
        {
            "workflow": {
                "steps": [{"command": "wordpress.run-php", "args": ["code=1;"], "continuation": {"maxIterations": 3}}]
            }
        },
        "$.workflow.steps[0].continuation",
    ),
    ({"artifacts": {"typed": [{"name": "r", "type": "report", "path": "/tmp/r.json"}]}}, "$.artifacts.typed"),
    ({"artifacts": {"verify": {"enabled": True, "strict": True}}}, "$.artifacts.verify"),
]


@pytest.mark.parametrize(("over", "path"), UNSUPPORTED_CASES)
def test_spec_fields_not_executed_here_are_unsupported_field_issues(
    tmp_path: Path, over: dict[str, Any], path: str
) -> None:
    doc = _recipe(**over)
    result = validate_recipe_document(doc, base_dir=tmp_path, allow_downloads=False)
    assert not result.valid
    issue = next(i for i in result.issues if i.path == path)
    assert issue.code == "unsupported-field" and "does not implement" in issue.message
    # Never a schema error: the shape itself is the reference's.
    assert not [i for i in result.issues if i.code in ("unknown-field", "invalid-type", "invalid-value")]
    assert dry_run(result, tmp_path).get("plan") is None


# Hand-written invalid shapes for the new fields: all reported at once, each with its JSON path.
def test_new_field_shapes_are_checked_with_paths(tmp_path: Path) -> None:
    doc = _recipe(
        runtime={
            "workers": 0,
            "bundledExtensions": ["gd"],
            "hostNodeHeap": {"maximumMiB": 10},
            "preview": {"port": 70000},
        },
        inputs={
            "stagedFiles": [{"source": "a.txt"}, {"source": "a.txt", "target": "relative"}],
            "services": [{"type": "postgres"}],
            "fixtureDatabases": [{"name": "db", "source": "x.sql", "format": "csv"}],
            "pluginRuntime": {"healthProbes": [{"name": "h", "type": "http"}]},
        },
        probes=[{"name": "p"}, {"step": {"command": "wordpress.run-php"}}],
    )
    result = validate_recipe_document(doc, base_dir=tmp_path, allow_downloads=False)
    paths = {i.path for i in result.issues}
    assert {
        "$.runtime.workers",
        "$.runtime.bundledExtensions[0]",
        "$.runtime.hostNodeHeap.maximumMiB",
        "$.runtime.preview.port",
        "$.inputs.stagedFiles[0].target",
        "$.inputs.stagedFiles[1].target",
        "$.inputs.services[0].type",
        "$.inputs.fixtureDatabases[0].format",
        "$.inputs.pluginRuntime.healthProbes[0].type",
        "$.probes[0].step",
        "$.probes[1].name",
    } <= paths, paths


def test_staged_files_and_probes_semantics(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "fixture.txt").write_text("hi")
    ok = _recipe(
        inputs={
            "stagedFiles": [
                {"source": "data/fixture.txt", "target": "/tmp/fixture.txt"},
                {"source": "data", "target": "/tmp/data"},
            ]
        },
        probes=[
            {
                "name": "ping",
                "step": {"command": "wordpress.wp-cli", "args": ["command=wp option get home"]},
                "expectJson": {"ok": True},
            }
        ],
    )
    result = validate_recipe_document(ok, base_dir=tmp_path, allow_downloads=False)
    assert result.valid, result.issues
    assert result.policy is not None and "wordpress.wp-cli" in result.policy.commands  # probes feed the policy
    assert result.summary()["stagedFiles"] == 2 and result.summary()["probes"] == 1
    bad = _recipe(
        inputs={
            "stagedFiles": [
                {"source": "missing.txt", "target": "/tmp/x"},
                {"source": "https://example.com/x", "target": "/tmp/y"},
                {"source": "data", "target": "/"},
            ]
        },
        probes=[
            {"name": "a", "step": {"command": "nope"}},
            {"name": "a", "step": {"command": "wordpress.run-php", "args": ["nokey"]}},
        ],
    )
    codes = _codes(validate_recipe_document(bad, base_dir=tmp_path, allow_downloads=False))
    assert ("missing-source", "$.inputs.stagedFiles[0].source") in codes
    assert ("invalid-source", "$.inputs.stagedFiles[1].source") in codes
    assert ("invalid-sandbox-path", "$.inputs.stagedFiles[2].target") in codes
    assert ("unsupported-command", "$.probes[0].step.command") in codes
    assert ("duplicate-probe-name", "$.probes[1].name") in codes
    assert any(p.startswith("$.probes[1].step.args") for _c, p in codes)


# Our own recipes written in the shapes of the reference project's examples (examples/recipes/*.json and
# its cookbook): each validates, or gives exactly the documented clear issue.
def test_reference_shaped_recipes(tmp_path: Path) -> None:
    (tmp_path / "demo-plugin").mkdir()
    (tmp_path / "recipes").mkdir()
    base = tmp_path / "recipes"

    def check(doc: dict[str, Any]) -> list[tuple[str, str]]:
        path = base / "r.json"
        path.write_text(json.dumps(doc))
        return _codes(validate_recipe_file(path))

    wp_cli_lab = {
        "schema": RECIPE_SCHEMA,
        "runtime": {"backend": "wordpress-playground", "name": "cli-lab", "wp": "latest"},
        "inputs": {
            "mounts": [
                {
                    "source": "../demo-plugin",
                    "target": "/wordpress/wp-content/plugins/demo-plugin",
                    "mode": "readwrite",
                    "metadata": {"kind": "recipe-support", "slug": "demo"},
                }
            ]
        },
        "workflow": {
            "steps": [
                {"command": "wordpress.wp-cli", "args": ["command=wp option update demo_flag on"]},
                {
                    "command": "wordpress.run-php",
                    "args": ["code=echo wp_json_encode(['flag' => get_option('demo_flag')]);"],
                },
            ]
        },
        "artifacts": {"directory": "./artifacts"},
    }
    assert check(wp_cli_lab) == []
    # A WordPress release that is not shipped offline: one clear issue at $.runtime.wp, nothing booted.
    future = {**wp_cli_lab, "runtime": {"backend": "wordpress-playground", "name": "repro", "wp": "7.0"}}
    assert check(future) == [("unknown-wordpress-version", "$.runtime.wp")]
    # backend "wordpress" normalises to Playground.
    assert check({**wp_cli_lab, "runtime": {"backend": "wordpress"}}) == []
    multi_actor = {
        "schema": RECIPE_SCHEMA,
        "inputs": {
            "fixtureUsers": [{"name": "author", "username": "fx-author", "role": "editor"}],
            "userSessions": [{"name": "author-session", "user": "author"}],
            "browserActors": [{"name": "author", "userSession": "author-session"}],
        },
        "workflow": {"steps": [{"command": "wordpress.browser-scenario", "args": ["scenario-json={}"]}]},
    }
    assert sorted(check(multi_actor)) == [
        ("unsupported-command", "$.workflow.steps[0].command"),
        ("unsupported-field", "$.inputs.browserActors"),
        ("unsupported-field", "$.inputs.fixtureUsers"),
        ("unsupported-field", "$.inputs.userSessions"),
    ]
    campaign = {
        "schema": RECIPE_SCHEMA,
        "runtime": {"backend": "wordpress"},
        "workflow": {"steps": [{"command": "wordpress.run-php", "args": ["code=delete_option('x');"]}]},
        "adversarialCampaigns": [
            {
                "schema": "wp-codebox/adversarial-recipe-campaign/v1",
                "id": "c",
                "seed": "s",
                "corpus": [],
                "budgets": {"maxCases": 4},
            }
        ],
    }
    assert check(campaign) == [("unsupported-field", "$.adversarialCampaigns")]


def test_runtime_blueprint_applied_subset_and_unsupported_parts(tmp_path: Path) -> None:
    applied = {
        "steps": [
            {"step": "setSiteOptions", "options": {"blogname": "B"}},
            {"step": "runPHP", "code": "<?php echo 1;"},
            {"step": "writeFile", "path": "/tmp/a", "data": "x"},
            "noop",
        ],
        "siteOptions": {"blogdescription": "d"},
        "meta": {"title": "t"},
    }
    assert validate_recipe_document(
        _recipe(runtime={"blueprint": applied}), base_dir=tmp_path, allow_downloads=False
    ).valid
    bad = {
        "steps": [{"step": "login"}, {"step": "writeFile", "path": "/tmp/a"}, {"step": "nope"}],
        "landingPage": "/wp-admin/",
    }
    codes = _codes(
        validate_recipe_document(_recipe(runtime={"blueprint": bad}), base_dir=tmp_path, allow_downloads=False)
    )
    assert [c for c in codes if c[1].startswith("$.runtime.blueprint.steps[2]")]  # unknown step: shape error first
    fine_shape = {
        "steps": [{"step": "login"}, {"step": "writeFile", "path": "/tmp/a"}],
        "landingPage": "/wp-admin/",
        "features": {"networking": False},
    }
    codes = _codes(
        validate_recipe_document(_recipe(runtime={"blueprint": fine_shape}), base_dir=tmp_path, allow_downloads=False)
    )
    assert codes == [
        ("unsupported-field", "$.runtime.blueprint.landingPage"),
        ("unsupported-field", "$.runtime.blueprint.features"),
        ("unsupported-field", "$.runtime.blueprint.steps[0].step"),
        ("invalid-blueprint-step", "$.runtime.blueprint.steps[1].data"),
    ]


def test_declared_artifact_paths_are_checked(tmp_path: Path) -> None:
    doc = _recipe(artifacts={"paths": [{"name": "a b", "path": "/tmp/a"}, {"name": "a-b", "path": "/tmp/../etc"}]})
    codes = _codes(validate_recipe_document(doc, base_dir=tmp_path, allow_downloads=False))
    assert codes == [
        ("invalid-sandbox-path", "$.artifacts.paths[1].path"),
        ("duplicate-artifact-name", "$.artifacts.paths[1].name"),
    ]


# runtime.preview: a held preview asked for by the recipe (docs/sites.md, "Held previews"); every bad value is named by
# its JSON path.
@pytest.mark.parametrize(
    ("preview", "path", "says"),
    [
        ({"hold": "soon"}, "$.runtime.preview.hold", "does not match"),
        ({"hold": -5}, "$.runtime.preview.hold", ""),
        ({"hold": "0s"}, "$.runtime.preview.hold", "longer than zero"),
        ({"hold": "5m", "port": 0}, "$.runtime.preview.port", ""),
        ({"hold": "5m", "publicUrl": "ftp://tunnel.example"}, "$.runtime.preview.publicUrl", "http:// or https://"),
        ({"hold": "5m", "publicUrl": "https://tunnel.example/?a=1"}, "$.runtime.preview.publicUrl", "no query"),
        ({"hold": "5m", "holdFor": 1}, "$.runtime.preview.holdFor", "unknown field"),
    ],
)
def test_a_bad_runtime_preview_is_named_by_its_json_path(
    tmp_path: Path, preview: dict[str, Any], path: str, says: str
) -> None:
    result = validate_recipe_document(_recipe(runtime={"preview": preview}), base_dir=tmp_path, allow_downloads=False)
    assert [i.path for i in result.issues] == [path], result.issues
    assert says in result.issues[0].message


def test_a_runtime_preview_fills_the_run_request_and_its_schema_is_generated(tmp_path: Path) -> None:
    doc = _recipe(runtime={"preview": {"hold": "15m", "port": 9400, "publicUrl": "https://tunnel.example/"}})
    result = validate_recipe_document(doc, base_dir=tmp_path, allow_downloads=False)
    assert result.valid, result.issues
    request, _ = recipe_request(result, tmp_path, tmp_path / "scratch")
    assert (request.hold_s, request.preview_port, request.public_url) == (900.0, 9400, "https://tunnel.example")
    assert dry_run(result, tmp_path)["plan"]["runtime"]["preview"] == {
        "holdSeconds": 900.0,
        "port": 9400,
        "publicUrl": "https://tunnel.example",
    }
    seconds = validate_recipe_document(
        _recipe(runtime={"preview": {"hold": 90}}), base_dir=tmp_path, allow_downloads=False
    )
    assert recipe_request(seconds, tmp_path, tmp_path / "scratch")[0].hold_s == 90.0
    preview_schema = recipe_json_schema()["$defs"]["RuntimePreview"]
    assert {"hold", "port", "publicUrl"} <= set(preview_schema["properties"])
