"""Page requests and the preview on the native backend (docs/backends.md, "Page requests and the preview"):
one module-scoped native sandbox, real php-cgi in real bubblewrap, the real relay and real Chromium."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.factories.native import native_sandbox, raw_http

pytestmark = pytest.mark.native

# A must-use plugin the tests drive by query: echo what the request carried, or break the page's script.
TEST_PLUGIN = r"""<?php
if ( isset( $_GET['codebox-echo'] ) ) {
	header( 'Content-Type: application/json' );
	echo json_encode( array( 'method' => $_SERVER['REQUEST_METHOD'], 'body' => file_get_contents( 'php://input' ),
		'post' => $_POST, 'cookie' => $_COOKIE, 'type' => isset( $_SERVER['CONTENT_TYPE'] ) ? $_SERVER['CONTENT_TYPE'] : '' ) );
	exit;
}
if ( isset( $_GET['codebox-hang'] ) ) {
	shell_exec( 'setsid php -r "sleep(600);" ' . escapeshellarg( $_GET['codebox-hang'] ) . ' > /dev/null 2>&1 &' );
	while ( true ) {
	}
}
if ( isset( $_GET['codebox-edit'] ) ) {
	echo 'version-one';
	exit;
}
if ( isset( $_GET['codebox-break'] ) ) {
	add_action( 'wp_head', function () {
		echo "<script>console.error('codebox: broken by a plugin'); codeboxUndefinedFunction();</script>";
	} );
}
"""


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Any]:
    with native_sandbox() as booted:
        booted.write_file("/wordpress/wp-content/mu-plugins/codebox-preview-test.php", TEST_PLUGIN.encode())
        yield booted


def test_the_front_page_a_404_and_a_redirect(sandbox: Any) -> None:
    name = sandbox.run_php("<?php require '/wordpress/wp-load.php'; echo get_bloginfo('name');", 60).text
    front = sandbox.request("/", 120)
    assert front.status == 200 and front.headers["content-type"][0].startswith("text/html")
    assert re.search(r"<title>[^<]*" + re.escape(name), front.text), front.text[:500]
    assert sandbox.preview_url in front.text  # WordPress's home is the preview
    missing = sandbox.request("/?p=987654", 120)
    assert missing.status == 404
    admin = sandbox.request("/wp-admin/", 120)
    assert admin.status == 302 and admin.headers["location"][0].startswith(f"{sandbox.preview_url}/wp-login.php")
    assert (
        sandbox.request("/?rest_route=/wp/v2/types/post", 120).headers["content-type"][0].startswith("application/json")
    )


def test_a_static_core_asset_has_its_bytes_and_content_type(sandbox: Any) -> None:
    from codebox_tui.runtime.golden import ensure_golden_site
    from codebox_tui.runtime.wordpress_builds import resolve_build
    from codebox_tui.settings import get_settings

    core = ensure_golden_site(resolve_build(sandbox.wordpress_version), get_settings().golden_dir)
    for path, kind in (
        ("/wp-includes/css/dashicons.min.css", "text/css"),
        ("/wp-includes/js/jquery/jquery.min.js", "text/javascript"),
        ("/wp-includes/images/w-logo-blue.png", "image/png"),
    ):
        status, headers, body = raw_http(int(sandbox.preview_url.rsplit(":", 1)[1]), f"GET {path}")
        assert status == 200 and headers["content-type"].startswith(kind), (path, headers)
        assert body == (core / path.lstrip("/")).read_bytes()


def test_a_post_through_the_relay_carries_its_body_cookie_and_content_type(sandbox: Any) -> None:
    request = urllib.request.Request(
        f"{sandbox.preview_url}/?codebox-echo=1",
        data=b"a=1&b=two",
        headers={"Cookie": "flavour=plain", "Content-Type": "application/x-www-form-urlencoded"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        echoed = json.loads(response.read())
    assert echoed == {
        "method": "POST",
        "body": "a=1&b=two",
        "post": {"a": "1", "b": "two"},
        "cookie": {"flavour": "plain"},
        "type": "application/x-www-form-urlencoded",
    }
    login = urllib.request.Request(
        f"{sandbox.preview_url}/wp-login.php",
        data=b"log=admin&pwd=wrong-password",
        headers={"Cookie": "wordpress_test_cookie=WP%20Cookie%20check"},
        method="POST",
    )
    with urllib.request.urlopen(login, timeout=120) as response:
        page = response.read().decode()
    assert response.status == 200 and "login_error" in page  # WordPress checked the password and said no


def test_a_browser_probe_sees_the_page_a_plugin_breaks(sandbox: Any, tmp_path: Path) -> None:
    from codebox_tui.browser.probe import run_probe

    base = sandbox.preview_url
    summary = run_probe(f"{base}/?codebox-break=1", tmp_path, timeout_s=120, origin_url=base)
    assert summary["httpStatus"] == 200 and summary["error"] is None, summary
    assert "codebox: broken by a plugin" in summary["consoleErrors"]
    assert any("codeboxUndefinedFunction" in error for error in summary["pageErrors"]), summary
    assert (tmp_path / "screenshot.png").read_bytes().startswith(b"\x89PNG")
    assert summary["counts"]["failedRequests"] == 0  # every stylesheet and script came through the relay


def test_a_hung_request_stops_the_worker_and_the_next_request_gets_a_new_one(sandbox: Any) -> None:
    """A page that loops forever after starting a background child in a session of its own: the request
    fails with sandbox-timeout (a 504 through the relay), the worker and every process it started are
    gone, and the next request is served by a fresh worker."""
    import os
    import subprocess

    from codebox_tui.errors import SandboxError
    from tests.factories.waiting import wait_until

    assert sandbox.request("/wp-includes/images/blank.gif", 120).status == 200
    first_pid, starts = sandbox.worker.pid, sandbox.worker.starts
    marker = f"native-page-hang-{os.getpid()}"
    with pytest.raises(SandboxError) as raised:
        sandbox.request(f"/?codebox-hang={marker}", 5)
    assert raised.value.code == "sandbox-timeout"
    assert sandbox.worker.pid is None

    def leftovers() -> str:
        return subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.strip()

    assert wait_until(lambda: leftovers() == ""), leftovers()
    assert sandbox.request("/wp-includes/images/blank.gif", 120).status == 200
    assert sandbox.worker.starts == starts + 1 and sandbox.worker.pid not in (None, first_pid)


def test_a_worker_bubblewrap_cannot_confine_fails_closed_saying_why(tmp_path: Path) -> None:
    """A mount bubblewrap cannot make (a new folder inside read-only core): the first page request fails with
    confinement-failed and bwrap's reason, as a command does, and never runs PHP unconfined."""
    from codebox_tui.errors import SandboxError

    folder = tmp_path / "folder"
    folder.mkdir()
    with (
        native_sandbox(mounts=[f"{folder}:/wordpress/new-folder:readonly"]) as broken,
        pytest.raises(SandboxError) as raised,
    ):
        broken.request("/wp-includes/images/blank.gif", 120)
    assert raised.value.code == "confinement-failed" and "/wordpress/new-folder" in raised.value.message


def test_code_a_command_changes_runs_at_the_next_page(sandbox: Any) -> None:
    """The worker keeps compiled scripts in memory but checks every file's timestamp at every request: a
    plugin file a command rewrites between two requests (its modification time moved on) is what the next
    request runs, with no revalidation delay."""
    path = "/wordpress/wp-content/mu-plugins/codebox-preview-test.php"
    assert sandbox.request("/?codebox-edit=1", 120).text == "version-one"
    plugin = sandbox.read_file(path, max_bytes=1 << 20)
    sandbox.write_file(path, plugin.replace(b"echo 'version-one';", b"echo 'version-two';"))
    touched = sandbox.run_php(f"<?php touch('{path}', time() + 60);", 60)  # never the second it had
    assert touched.exit_code == 0, touched.errors
    assert sandbox.request("/?codebox-edit=1", 120).text == "version-two"


# A call to an undefined function at the plugin's top level: WordPress cannot load it.
FATAL_ON_LOAD = "\n".join(
    [
        "diff --git a/buggy-counter.php b/buggy-counter.php",
        "--- a/buggy-counter.php",
        "+++ b/buggy-counter.php",
        "@@ -6,5 +6,6 @@",
        "  */",
        " ",
        "+codebox_no_such_function_on_load();",
        " function buggy_counter_count( $text ) {",
        " \t// Bug: splitting on a single space counts empty strings between repeated spaces as words.",
        " \treturn count( explode( ' ', trim( $text ) ) );",
        "",
    ]
)


@pytest.mark.timeout(900)  # a whole evaluation through the CLI on a shared machine
def test_evaluate_patch_natively_says_plugin_broken_for_a_fatal_on_load_patch(tmp_path: Path) -> None:
    """The whole flow through the real CLI on native (its improvement verdict is compared with Playground's in
    tests/e2e/test_backend_parity.py): a patch that makes the plugin fatal on load is plugin-broken, exit 1."""
    import os
    import subprocess
    import sys

    from tests.factories.paths import REPO
    from tests.factories.toolchains import PHPUNIT_POLYFILLS, WP_TESTS_LIB, require

    require(WP_TESTS_LIB / "includes" / "bootstrap.php", PHPUNIT_POLYFILLS / "phpunitpolyfills-autoload.php")
    patch = tmp_path / "fatal.patch"
    patch.write_text(FATAL_ON_LOAD)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "codebox_tui",
            "evaluate-patch",
            "--backend",
            "native",
            "--plugin",
            str(REPO / "examples" / "plugins-for-recipes" / "buggy-counter"),
            "--patch",
            str(patch),
            "--artifacts",
            str(tmp_path / "artifacts"),
            "--json",
            "-q",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={
            **os.environ,
            "WP_TESTS_DIR": str(WP_TESTS_LIB),
            "WP_TESTS_PHPUNIT_POLYFILLS_PATH": str(PHPUNIT_POLYFILLS),
        },
    )
    doc = json.loads(out.stdout)
    assert out.returncode == 1, out.stderr
    assert doc["tests"]["verdict"] == "plugin-broken" and doc["success"] is False
    assert doc["pluginLoad"]["before"] is None and "codebox_no_such_function_on_load" in doc["pluginLoad"]["after"]
