"""Previews that outlive the command, through the real CLI (docs/sites.md, "Held previews"): `run` and `recipe-run
--preview-hold` keep the site up after their commands on a fixed port, `--preview-public-url` aligns
WP_HOME/WP_SITEURL with a tunnel's address, `boot --blueprint` sets the held site up, and `boot` captures a bundle
when its hold ends, so an edit made through `codebox exec` is reviewed and applied from the CLI. Every hold is
released by a signal, never by waiting for it to expire. One sandbox per held command, each in its own `codebox`
process: `boot --blueprint` on Playground (with a public URL; the native backend refuses blueprints), `run
--preview-hold` and `recipe-run --preview-public-url` on the native backend, the faster one. The commands used on a held sandbox (`exec`, `review`, `apply`) and the refusals go
through the real entry point in the test's process (tests/factories/holds.py)."""

from __future__ import annotations

import json
import re
import shutil
import signal
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.factories.held import HeldCommand, free_port
from tests.factories.holds import codebox_in_process as codebox
from tests.factories.holds import linked_home
from tests.factories.native import raw_http, recorded_backend


@pytest.fixture
def home(codebox_home: Path) -> Iterator[Path]:
    """A CODEBOX_HOME of the test's own sharing the session's WordPress builds (nothing boots for it), in a short
    folder: the held sandbox's exec socket lives under it and a Unix socket path has at most 108 bytes (pytest's
    folders under xdist are longer)."""
    short = Path(tempfile.mkdtemp(prefix="cbx-", dir="/tmp"))
    try:
        yield linked_home(codebox_home, short)
    finally:
        shutil.rmtree(short, ignore_errors=True)


TUNNEL = "https://tunnel.example.test"
SITE_FACTS = 'wp eval \'echo WP_HOME, "|", WP_SITEURL, "|", get_option("blogname");\''


def _rest_index(url: str) -> dict[str, object]:
    with urllib.request.urlopen(url + "/?rest_route=/", timeout=120) as response:
        assert response.status == 200
        value = json.loads(response.read())
    assert isinstance(value, dict)
    return value


def _events(run_dir: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


@pytest.mark.playground
def test_boot_with_a_blueprint_holds_then_captures_what_exec_changed_for_review_and_apply(
    tmp_path: Path, home: Path
) -> None:
    plugin = tmp_path / "tiny"
    plugin.mkdir()
    (plugin / "tiny.php").write_text("<?php\n/* Plugin Name: Tiny */\n")
    blueprint = tmp_path / "blueprint.json"
    blueprint.write_text(
        json.dumps(
            {
                "siteOptions": {"blogname": "Set by the blueprint"},
                "steps": [{"step": "mkdir", "path": "/wordpress/wp-content/uploads/bp"}],
            }
        )
    )
    port = free_port()
    held = HeldCommand(
        home,
        "boot",
        "--hold",
        "10m",
        "--preview-port",
        str(port),
        "--blueprint",
        str(blueprint),
        "--preview-public-url",
        TUNNEL + "/",
        "--mount",
        f"{plugin}:/wordpress/wp-content/plugins/tiny",
        "--json",
    )
    try:
        where, runtime_id = held.wait_held()
        assert where == TUNNEL  # the address a browser uses; the trailing slash dropped as WordPress keeps it
        boot_doc = json.loads(held.stdout)
        assert boot_doc["previewUrl"] == f"http://127.0.0.1:{port}"  # served locally, on the port asked for
        assert _rest_index(boot_doc["previewUrl"])["name"] == "Set by the blueprint"
        facts = codebox(home, "exec", "--sandbox", runtime_id, "--capabilities", "read,eval", SITE_FACTS)
        assert facts.returncode == 0, facts.stderr
        assert facts.stdout == f"{TUNNEL}|{TUNNEL}|Set by the blueprint"
        edit = codebox(
            home,
            "exec",
            "--sandbox",
            runtime_id,
            "--capabilities",
            "read,write",
            "echo '// edited in the held sandbox' >> wp-content/plugins/tiny/tiny.php",
        )
        assert edit.returncode == 0, edit.stderr
        assert "edited" not in (plugin / "tiny.php").read_text()  # the private copy, not the host folder
        assert held.release(signal.SIGTERM) == 0, held.stderr
    finally:
        held.kill()
    captured = re.search(r"codebox: bundle (\S+) in (\S+); review it with: codebox review show (@\d+)", held.stderr)
    assert captured, held.stderr
    events = _events(Path(captured.group(2)))
    assert [e["data"] for e in events if e["type"] == "runtime.hold-ended"] == [{"reason": "interrupted"}]
    assert recorded_backend(Path(captured.group(2))) == "wordpress-playground"
    shown = codebox(home, "review", "show", captured.group(3))
    assert shown.returncode == 0 and "modified  tiny.php" in shown.stdout, shown.stdout + shown.stderr
    approved = codebox(home, "review", "approve", captured.group(3), "--json")
    assert approved.returncode == 0, approved.stdout + approved.stderr
    decision = json.loads(approved.stdout)
    assert decision["approved_relative_paths"] == ["tiny.php"]  # the blueprint's set-up is not a change to review
    applied = codebox(home, "apply", str(decision["id"]), "--adapter", "directory", "--target", str(plugin))
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert (plugin / "tiny.php").read_text().endswith("// edited in the held sandbox\n")


@pytest.mark.native
def test_run_preview_hold_keeps_the_site_up_after_the_command_until_released(tmp_path: Path, home: Path) -> None:
    port = free_port()
    held = HeldCommand(
        home,
        "run",
        "--backend",
        "native",
        "--preview-hold",
        "10m",
        "--preview-port",
        str(port),
        "--json",
        "-c",
        "wordpress.run-php",
        "-a",
        "code=update_option('blogname', 'Changed by the command'); echo get_option('home');",
    )
    try:
        where, runtime_id = held.wait_held()
        assert where == f"http://127.0.0.1:{port}"
        # the command has finished; the site it left is still served, for a browser
        assert _rest_index(where)["name"] == "Changed by the command"
        assert held.release(signal.SIGINT) == 0, held.stderr  # Ctrl-C
    finally:
        held.kill()
    doc = json.loads(held.stdout)
    assert doc["success"] is True and doc["runtime"]["id"] == runtime_id
    assert doc["execution"]["stdout"] == f"http://127.0.0.1:{port}"
    run_dir = Path(doc["artifacts"]["directory"])
    assert recorded_backend(run_dir) == "native"
    kinds = [e["type"] for e in _events(run_dir)]
    assert kinds.index("command.finished") < kinds.index("runtime.held") < kinds.index("runtime.hold-ended")
    assert doc["artifacts"]["id"]  # captured after the hold
    with pytest.raises(OSError):  # and disposed
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5)


@pytest.mark.native
def test_recipe_run_preview_hold_serves_the_site_the_recipe_left_under_the_public_url(
    tmp_path: Path, home: Path
) -> None:
    """On native: WordPress names the public URL while the relay serves on 127.0.0.1, to its own name and to the
    public URL's host (as a tunnel forwards requests)."""
    recipe = tmp_path / "recipe.json"
    recipe.write_text(
        json.dumps(
            {
                "schema": "wp-codebox/workspace-recipe/v1",
                "workflow": {
                    "steps": [
                        {
                            "command": "wordpress.run-php",
                            "args": ["code=update_option('blogname', 'Left by the recipe'); echo 'ok';"],
                        }
                    ]
                },
            }
        )
    )
    port = free_port()
    held = HeldCommand(
        home,
        "recipe-run",
        str(recipe),
        "--backend",
        "native",
        "--preview-hold",
        "10m",
        "--preview-port",
        str(port),
        "--preview-public-url",
        TUNNEL,
        "--json",
    )
    try:
        where, runtime_id = held.wait_held()
        assert where == TUNNEL
        index = _rest_index(f"http://127.0.0.1:{port}")
        assert index["name"] == "Left by the recipe" and index["home"] == index["url"] == TUNNEL
        # through the tunnel: the request names the public host; the page's links name the public URL
        status, _, body = raw_http(port, "GET /", host_header=TUNNEL.split("://", 1)[1])
        page = body.decode("utf-8", "replace")
        assert status == 200 and "<title>Left by the recipe" in page, (status, page[:500])
        assert f'href="{TUNNEL}/' in page and f"127.0.0.1:{port}" not in page
        assert raw_http(port, "GET /", host_header="rebound.example")[0] == 421  # any other name: refused
        facts = codebox(home, "exec", "--sandbox", runtime_id, "--capabilities", "read,eval", SITE_FACTS)
        assert facts.stdout == f"{TUNNEL}|{TUNNEL}|Left by the recipe", facts.stderr
        assert held.release(signal.SIGTERM) == 0, held.stderr
    finally:
        held.kill()
    outcome = json.loads(held.stdout)
    assert outcome["success"] is True and outcome["runtimeId"] == runtime_id and outcome["bundleId"]
    assert recorded_backend(Path(outcome["bundleDir"])) == "native"


@pytest.mark.native
def test_a_recipe_asks_for_its_own_hold_and_a_command_line_option_wins(tmp_path: Path, home: Path) -> None:
    """`runtime.preview` in the recipe holds the site with no --preview-hold; --preview-port beats its port."""
    asked, given = free_port(), free_port()
    recipe = tmp_path / "recipe.json"
    recipe.write_text(
        json.dumps(
            {
                "schema": "wp-codebox/workspace-recipe/v1",
                "runtime": {"backend": "native", "preview": {"hold": "10m", "port": asked}},
                "workflow": {
                    "steps": [
                        {
                            "command": "wordpress.run-php",
                            "args": ["code=update_option('blogname', 'Held by the recipe'); echo 'ok';"],
                        }
                    ]
                },
            }
        )
    )
    held = HeldCommand(home, "recipe-run", str(recipe), "--preview-port", str(given), "--json")
    try:
        where, runtime_id = held.wait_held()
        assert where == f"http://127.0.0.1:{given}"
        assert "held for 600s" in held.stderr
        assert _rest_index(where)["name"] == "Held by the recipe"
        assert held.release(signal.SIGTERM) == 0, held.stderr
    finally:
        held.kill()
    outcome = json.loads(held.stdout)
    assert outcome["success"] is True and outcome["runtimeId"] == runtime_id and outcome["bundleId"]
    kinds = [e["type"] for e in _events(Path(outcome["bundleDir"]))]
    assert kinds.index("runtime.held") < kinds.index("runtime.hold-ended")


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--preview-public-url", "https://tunnel.example"], "preview-public-url"),  # no hold to name
        (["--preview-hold", "1m", "--preview-public-url", "ftp://tunnel.example"], "preview-public-url"),
        (["--preview-hold", "soon"], "--preview-hold"),
    ],
)
def test_bad_preview_options_are_refused_before_anything_boots(tmp_path: Path, args: list[str], field: str) -> None:
    home = tmp_path / "home"
    refused = codebox(home, "run", "-c", "wordpress.run-php", "-a", "code=echo 1;", "--json", *args)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert json.loads(refused.stdout)["error"]["field"] == field
    assert not (home / "sandboxes").exists()  # nothing booted
