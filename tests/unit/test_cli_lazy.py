"""The root command imports a sub-command's area only to run it (codebox_tui/cli/__init__.py, "lazy sub-commands"):
`codebox --help` imports no area, `codebox run` only the run area; the listing's one-line help is the
commands' own."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from codebox_tui import cli


def _first_paragraph(text: str | None) -> str:
    return " ".join((text or "").split("\n\n")[0].split())


def test_the_listing_table_matches_what_the_areas_register() -> None:
    registered: dict[str, str] = {}
    for area in {area for area, _ in cli.SUBCOMMANDS.values()}:
        for name, command in cli.load_area(area).items():
            registered[name] = _first_paragraph(command.help)
    assert set(registered) == set(cli.SUBCOMMANDS)
    for name, (_, listed) in cli.SUBCOMMANDS.items():
        assert _first_paragraph(listed) == registered[name], name


def _modules_after(args: list[str]) -> list[str]:
    probe = (
        "import json, sys\n"
        "from codebox_tui import cli\n"
        f"try:\n    cli.main({args!r})\nexcept SystemExit:\n    pass\n"
        "names = [m for m in sys.modules if m.startswith(('codebox_tui.cli.', 'codebox_tui.lifecycle',"
        " 'codebox_tui.agents', 'codebox_tui.mcp_server', 'ray', 'mcp')) and m != 'codebox_tui.cli.output']\n"
        "sys.stderr.write('MODULES ' + json.dumps(sorted(names)) + '\\n')\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    line = next(x for x in result.stderr.splitlines() if x.startswith("MODULES "))
    return list(json.loads(line.removeprefix("MODULES ")))


def test_help_imports_no_area() -> None:
    assert _modules_after(["--help"]) == []


def test_a_run_imports_the_run_area_alone() -> None:
    loaded = _modules_after(["run", "--help"])
    assert "codebox_tui.cli.run" in loaded
    assert not [
        m
        for m in loaded
        if m.startswith(
            (
                "codebox_tui.cli.agent",
                "codebox_tui.cli.recipe",
                "codebox_tui.cli.mcp",
                "codebox_tui.cli.batch",
                "codebox_tui.agents",
                "codebox_tui.mcp_server",
                "ray",
                "mcp",
            )
        )
    ]


def test_an_area_command_still_runs_and_an_unknown_one_is_a_usage_error() -> None:
    ok = subprocess.run(
        [sys.executable, "-m", "codebox_tui", "artifacts", "--help"], capture_output=True, text=True, timeout=120
    )
    assert ok.returncode == 0 and "prune" in ok.stdout  # registered by the review area onto artifacts
    bad = subprocess.run(
        [sys.executable, "-m", "codebox_tui", "no-such-command"], capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 2 and "no-such-command" in bad.stderr


def test_a_one_shot_run_imports_no_playground_blueprint_episode_or_schema_machinery() -> None:
    """Issue #27/#28: what a one-shot `codebox run` loads before it boots (the run area and the lifecycle) leaves
    out what only other commands or backends use (checked in a new process's sys.modules, never by timing)."""
    probe = (
        "import json, sys\n"
        "from codebox_tui.cli import load_area, SUBCOMMANDS\n"
        "load_area(SUBCOMMANDS['run'][0])\n"
        "sys.stderr.write('MODULES ' + json.dumps(sorted(sys.modules)) + '\\n')\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    line = next(x for x in result.stderr.splitlines() if x.startswith("MODULES "))
    loaded = set(json.loads(line.removeprefix("MODULES ")))
    assert "codebox_tui.cli.run" in loaded and "codebox_tui.lifecycle.service" in loaded
    unwanted = {
        "codebox_tui.cli.boot",  # the held boot and its blueprints
        "codebox_tui.cli.episode",
        "codebox_tui.cli.held",
        "codebox_tui.recipes.run",
        "codebox_tui.contracts.schemas",  # every contract's generated schema
        "codebox_tui.contracts.agent",
        "codebox_tui.contracts.recipe",
        "jsonschema",  # only a bundle's inline payload schema needs it (bundle/verify/schema.py)
        "referencing",
        "pydantic_settings",  # settings.py reads the environment itself
        "asyncio",
    }
    assert sorted(unwanted & loaded) == []


def test_a_native_run_path_loads_no_playground_sidecar_browser_bench_or_other_area() -> None:
    """Issue #28: what a native one-shot `codebox run` of `wordpress.run-php` loads (the run area, the lifecycle, the
    native backend, the command's own handler, a preview relay that nobody opens) leaves out the Playground backend
    and its Node sidecar machinery, `http.server`, the browser, bench and core-PHPUnit handlers and the other
    commands' packages (checked in a new process's sys.modules, never by timing)."""
    probe = (
        "import json, sys\n"
        "from codebox_tui.cli import load_area, SUBCOMMANDS\n"
        "load_area(SUBCOMMANDS['run'][0])\n"
        "from codebox_tui.runtime.backends import make_backend\n"
        "from codebox_tui.runtime.catalog import handler_for\n"
        "make_backend('native')\n"
        "handler_for('wordpress.run-php')\n"
        "from codebox_tui.runtime.native_preview import PreviewRelay\n"
        "relay = PreviewRelay(5.0)\n"  # every native sandbox's relay listens from boot; unopened, it loads no HTTP
        "relay.start(lambda request, timeout_s: None)\n"
        "relay.close()\n"
        "sys.stderr.write('MODULES ' + json.dumps(sorted(sys.modules)) + '\\n')\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    line = next(x for x in result.stderr.splitlines() if x.startswith("MODULES "))
    loaded = set(json.loads(line.removeprefix("MODULES ")))
    assert {"codebox_tui.runtime.native", "codebox_tui.runtime.commands"} <= loaded  # the path itself was loaded
    unwanted = (
        "codebox_tui.runtime.playground",
        "codebox_tui.runtime.sidecar",  # the Node sidecar
        "codebox_tui.runtime.pool_worker",  # Playground's prepared-copy pool
        "http.server",  # the preview relay's HTTP side loads at its first connection
        "codebox_tui.runtime.native_preview_http",
        "codebox_tui.browser.probe",  # the browser machinery (a run checks checkpoints without it)
        "codebox_tui.browser.launch",
        "codebox_tui.browser.actions",
        "codebox_tui.runtime.browser_commands",
        "codebox_tui.runtime.bench",  # the bench handler (its argument checks are runtime/bench_args.py)
        "codebox_tui.contracts.bench",
        "codebox_tui.runtime.core_phpunit",  # its checkout checks are runtime/core_checkout.py
        "codebox_tui.recipes",
        "codebox_tui.agents",
        "codebox_tui.batch",
        "codebox_tui.mcp_server",
        "codebox_tui.sites",
        "ray",
        "mcp",
        "playwright",
    )
    assert sorted(m for m in loaded if m in unwanted or m.startswith(tuple(f"{u}." for u in unwanted))) == []


def test_every_handler_the_catalog_names_is_loaded_on_demand_as_named() -> None:
    """The catalog names each handler as ``module:function`` and imports its module only when asked
    (runtime/catalog.py): each name resolves to that very function; a capability-only id stays a clear error."""
    from codebox_tui.errors import BadInputError
    from codebox_tui.runtime.catalog import POLICY_ONLY, command_catalog, handler_for

    for spec in command_catalog().commands:
        if spec.handler == POLICY_ONLY:
            with pytest.raises(BadInputError) as refused:
                handler_for(spec.id)
            assert refused.value.code == "policy-only-command"
            continue
        handler = handler_for(spec.id)
        assert f"{handler.__module__}:{handler.__name__}" == spec.handler
