"""`wp eval` with only the read and eval capabilities stays inside its meaning, WordPress APIs inside the
site (docs/exec.md, "Eval policy"; issue #25, finding 3).

Every attack runs for real through a real Playground sandbox and the exec path the TUI and `codebox exec`
use (``run_exec``). Each demonstrated bypass of the old deny-list is refused by the static policy; the
included-file attack goes past the static policy on purpose (an include of a literal path inside the
site is allowed, and the included file is never parsed by the policy) and shows the run-time wall alone
stops the write, the read and the loosening of open_basedir. After each attempt Playground's prepend is
unchanged and Codebox's trusted site-state summary still runs and sees no changed control file. It stays on
Playground: the prepend and `/internal/shared` are php-wasm's, and the run-time wall is the sidecar's
(node/evalwall.mjs); the native eval wall is open_basedir alone (docs/exec.md, "On the native backend")."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.contracts.exec import ExecLimits, ExecRequest, ExecResult
from codebox_tui.runtime import site_state
from codebox_tui.runtime.exec import run_exec

pytestmark = pytest.mark.playground

PREPEND = "/internal/shared/auto_prepend_file.php"
PLANTED = "codebox-eval-wall-planted"


@pytest.fixture(scope="module")
def box(playground_session: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    root: Path = tmp_path_factory.mktemp("eval-wall")
    run = playground_session.new_run(root / "artifacts")
    with run:
        run.boot_sandbox()
        yield run


def wp_eval(run: Any, code: str) -> ExecResult:
    """`wp eval CODE` with the read and eval capabilities only."""
    return run_exec(
        run,
        ExecRequest(
            command=f"wp eval {shlex.quote(code)}",
            cwd="/wordpress",
            capabilities=["read", "eval"],
            # generous: the outcome must not depend on the machine's load
            limits=ExecLimits(timeoutMs=600_000),
        ),
    )


def php_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def assert_control_files_untouched(run: Any, before: Any) -> None:
    """The trusted summary still runs and Playground's control files (the prepend first) are unchanged."""
    after = site_state.take_summary(run.sandbox)
    assert after.controlFiles.get(PREPEND) == before.controlFiles.get(PREPEND)
    assert after.controlFiles == before.controlFiles
    plain = run.sandbox.run_php("<?php echo file_get_contents('" + PREPEND + "');", 60).text
    assert PLANTED not in plain


@pytest.fixture(scope="module")
def control(box: Any) -> Any:
    """The trusted summary taken once, right after the boot: no test here may change a control file (each
    compares its own "after" with it), so one "before" serves them all instead of a summary per test."""
    return site_state.take_summary(box.sandbox)


WRITE = f"'{PREPEND}', '<?php /* {PLANTED} */'"

# One per bypass demonstrated in issue #25 (finding 3): each must be refused before anything runs.
STATIC_REFUSALS = {
    "use-function-alias": f"use function file_put_contents as w; w({WRITE});",
    "use-function-alias-namespaced": f"namespace Foo; use function \\file_put_contents as w; w({WRITE});",
    "use-class-alias": f"use SplFileObject as S; $f = new S('{PREPEND}', 'w'); $f->fwrite('{PLANTED}');",
    "class-alias": f"class_alias('SplFileObject', 'X'); $f = new X('{PREPEND}', 'w'); $f->fwrite('{PLANTED}');",
    "anonymous-subclass": f"$f = new class('{PREPEND}', 'w') extends SplFileObject {{}}; $f->fwrite('{PLANTED}');",
    "array-map-file-function": "echo implode('', array_map('file_get_contents', ['/internal/shared/php.ini']));",
    "array-udiff-string-callback": f"array_udiff([{WRITE}], [], 'file_put_contents');",
    "filter-var-callback": "echo filter_var('/internal/shared/php.ini', FILTER_CALLBACK, "
    "['options' => 'file_get_contents']);",
    "ini-set": "ini_set('open_basedir', '/');",
    "ini-set-alias": "use function ini_set as i; i('open_basedir', '/');",
    "read-outside-the-site": "echo file_get_contents('/internal/shared/php.ini');",
    "include-outside-the-site": f"include '{PREPEND}';",
    "include-a-computed-path": "include ABSPATH . get_option('x');",
}


@pytest.mark.parametrize("code", list(STATIC_REFUSALS.values()), ids=list(STATIC_REFUSALS))
def test_each_demonstrated_bypass_is_refused(box: Any, control: Any, code: str) -> None:
    result = wp_eval(box, code)
    assert result.error is not None and result.error.code == "eval-policy", (result.stdout, result.stderr)
    assert result.exitCode == 126
    assert_control_files_untouched(box, control)


# Runs from an included file, which the static policy never parses: only the run-time wall stands.
INCLUDED = r"""<?php
$out = [];
$out['write-prepend'] = @file_put_contents('/internal/shared/auto_prepend_file.php', '<?php /* PLANTED */');
try {
    $f = new SplFileObject('/internal/shared/auto_prepend_file.php', 'a');
    $out['splfileobject'] = $f->fwrite('/* PLANTED */');
} catch (Throwable $e) { $out['splfileobject'] = false; }
$out['read-php-ini'] = @file_get_contents('/internal/shared/php.ini');
$out['ini-set-open-basedir'] = ini_set('open_basedir', '/');
@mkdir('/wordpress/wp-content/wall-sub');
$out['chdir-deeper'] = @chdir('/wordpress/wp-content/wall-sub');
$out['relative-open-basedir'] = ini_set('open_basedir', '..');
@chdir('..'); @chdir('..'); @chdir('..');
$out['read-after-chdir-trick'] = @file_get_contents('/internal/shared/php.ini');
$out['symlink-out'] = @symlink('/internal/shared/auto_prepend_file.php', '/wordpress/wp-content/wall-link.php');
$out['write-through-planted-link'] = @file_put_contents('/wordpress/wp-content/wall-planted-link.php', 'PLANTED');
$out['read-through-planted-link'] = @file_get_contents('/wordpress/wp-content/wall-planted-link.php');
$out['rename-into-internal'] = @rename('/wordpress/wp-content/wall-sub', '/internal/shared/preload');
echo json_encode($out);
""".replace("PLANTED", PLANTED)


def test_the_run_time_wall_alone_stops_code_the_static_policy_never_saw(box: Any, control: Any) -> None:
    """A file written inside the site (allowed: a literal path in /wordpress), then included by a second
    eval: the static policy allows both, so only the run-time wall can stop what the included code does.
    A link to the prepend planted in the site beforehand by the sandbox's own code does not lead out."""
    box.sandbox.run_php(f"<?php symlink('{PREPEND}', '/wordpress/wp-content/wall-planted-link.php');", 60)
    write = wp_eval(box, f"file_put_contents('/wordpress/wp-content/wall-payload.txt', {php_string(INCLUDED)});")
    assert write.error is None and write.exitCode == 0, write.stderr
    result = wp_eval(box, "include '/wordpress/wp-content/wall-payload.txt';")
    assert result.error is None, result.stderr  # the static policy let it through
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert lines, result.stdout
    outcome = json.loads(lines[-1])
    assert outcome["write-prepend"] is False
    assert outcome["splfileobject"] is False
    assert outcome["read-php-ini"] is False
    assert outcome["ini-set-open-basedir"] is False  # open_basedir can only be tightened
    assert outcome["chdir-deeper"] is False  # the working directory stays the site root
    assert outcome["read-after-chdir-trick"] is False
    assert outcome["symlink-out"] is False
    assert outcome["write-through-planted-link"] is False  # resolved through the link, refused
    assert outcome["read-through-planted-link"] is False
    assert outcome["rename-into-internal"] is False
    assert_control_files_untouched(box, control)


def test_a_setting_changed_by_eval_does_not_outlive_its_request(box: Any) -> None:
    """What an eval request changes with ini_set (reached here through an included file) ends with it."""
    write = wp_eval(
        box,
        "file_put_contents('/wordpress/wp-content/wall-ini.txt', "
        '\'<?php ini_set("precision", "3"); echo ini_get("precision");\');',
    )
    assert write.exitCode == 0, write.stderr
    changed = wp_eval(box, "include '/wordpress/wp-content/wall-ini.txt';")
    assert changed.stdout.strip().endswith("3")
    after = wp_eval(box, "echo ini_get('precision');")
    assert after.stdout.strip().endswith("14")


def test_wordpress_apis_still_work_under_the_wall(box: Any) -> None:
    code = (
        "update_option('codebox_wall', 'kept');"
        "$q = new WP_Query(['post_type' => 'post', 'posts_per_page' => 1]);"
        "$posts = get_posts(['numberposts' => 1]);"
        "add_filter('codebox_wall_filter', function ($v) { return $v . '-filtered'; });"
        "$id = wp_insert_user(['user_login' => 'wall-user', 'user_pass' => 'x-123456789-y', 'role' => 'editor']);"
        "$names = array_map('strtoupper', ['a']);"
        "usort($names, fn ($a, $b) => strcmp($a, $b));"
        "echo json_encode(['option' => get_option('codebox_wall'), 'query' => $q->found_posts >= 0,"
        " 'posts' => is_array($posts), 'filter' => apply_filters('codebox_wall_filter', 'v'),"
        " 'user' => !is_wp_error($id), 'map' => $names[0]]);"
    )
    result = wp_eval(box, code)
    assert result.error is None and result.exitCode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {
        "option": "kept",
        "query": True,
        "posts": True,
        "filter": "v-filtered",
        "user": True,
        "map": "A",
    }
