"""The native backend's walls (docs/backends.md, docs/security.md "Layers"). Every test performs the attack
for real, with the host's PHP inside a real native sandbox under real bubblewrap, and checks the host
afterwards. Child processes are used where they get past PHP's own checks, so the kernel wall is tested."""

from __future__ import annotations

import json
import os
import re
import socket
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.runtime.leftover_mounts import mount_points
from codebox_tui.settings import get_settings
from tests.factories.held import codebox
from tests.factories.native import native_sandbox, php_string, raw_http, run_natively, was_reached
from tests.factories.waiting import wait_until

pytestmark = pytest.mark.native


def test_open_basedir_holds_php_inside_the_sandbox_folders() -> None:
    """PHP's own wall: system files the kernel lets the process read (its php.ini, /usr) stay out of reach of
    PHP file functions, whatever PHP tries to loosen or route around it."""
    attack = textwrap.dedent("""\
        <?php
        $out = [];
        $out['loosen'] = ini_set('open_basedir', '/') === false ? 'refused' : ini_get('open_basedir');
        $out['ini'] = @file_get_contents('/etc/php/8.2/cli/php.ini') === false ? 'blocked' : 'read';
        $out['usr'] = @file_get_contents('/usr/share/common-licenses/GPL-3') === false ? 'blocked' : 'read';
        @chdir('/wordpress'); $out['dotdot'] = @file_get_contents('../etc/passwd') === false ? 'blocked' : 'read';
        $out['listing'] = @scandir('/etc') === false ? 'blocked' : 'read';
        $out['glob'] = count(glob('/etc/php/*') ?: []) === 0 ? 'blocked' : 'read';
        $out['copy'] = @copy('/etc/hostname', '/tmp/h') ? 'read' : 'blocked';
        echo json_encode($out);
        """)
    with native_sandbox() as sandbox:
        result = sandbox.run_php(attack, 60)
    assert result.exit_code == 0, result.errors
    assert result.text == (
        '{"loosen":"refused","ini":"blocked","usr":"blocked","dotdot":"blocked",'
        '"listing":"blocked","glob":"blocked","copy":"blocked"}'
    ), result.text


def test_a_host_file_outside_the_sandbox_cannot_be_read_even_by_a_child_process(tmp_path: Path) -> None:
    """A marker in the host's /tmp (and one under the test's own folder): a `cat` child is outside PHP's
    open_basedir, so only the kernel wall (nothing of the host is mounted) keeps it out."""
    import tempfile

    with tempfile.NamedTemporaryFile("w", prefix="codebox-native-marker-", dir="/tmp", suffix=".txt") as marker:
        marker.write("HOST-MARKER-41c9")
        marker.flush()
        elsewhere = tmp_path / "secret.txt"
        elsewhere.write_text("HOST-MARKER-41c9")
        attack = textwrap.dedent(f"""\
            <?php
            foreach ([{php_string(marker.name)}, {php_string(str(elsewhere))}] as $path) {{
                echo 'php:', @file_get_contents($path), "\\n";
                echo 'child:', shell_exec('cat ' . escapeshellarg($path) . ' 2>&1'), "\\n";
            }}
            echo 'tmp-listing:', str_replace("\\n", ',', shell_exec('ls -a /tmp 2>&1')), "\\n";
            """)
        with native_sandbox() as sandbox:
            result = sandbox.run_php(attack, 60)
    assert result.exit_code == 0, result.errors
    assert result.text.count("No such file or directory") == 2  # the children did run (and found nothing)
    assert "HOST-MARKER-41c9" not in result.text + result.errors
    listing = [line for line in result.text.splitlines() if line.startswith("tmp-listing:")]
    assert listing and Path(marker.name).name not in listing[0]  # the sandbox's /tmp is its own


def test_the_sandbox_cannot_change_its_own_bootstrap_or_configuration() -> None:
    """Rewrite, chmod, unlink or rename over bootstrap.php, wp-config.php and wp-cli.yml, from PHP and from a
    shell child: the files are read-only binds, so the host's copies and the next process's view are
    unchanged."""
    names = (
        "/codebox/config/bootstrap.php",
        "/wordpress/wp-config.php",
        "/codebox/config/wp-cli.yml",
        "/wordpress/wp-content/db.php",
    )
    attack = "<?php\n" + "".join(
        textwrap.dedent(f"""\
        $p = {php_string(name)};
        @chmod($p, 0666);
        @file_put_contents($p, "<?php define('CODEBOX_OWNED', 1);");
        @unlink($p);
        @file_put_contents('/tmp/evil', "<?php define('CODEBOX_OWNED', 1);"); @rename('/tmp/evil', $p);
        shell_exec('chmod 666 ' . escapeshellarg($p) . '; echo owned > ' . escapeshellarg($p) . ' 2>/dev/null');
        """)
        for name in names
    )
    with native_sandbox() as sandbox:
        config = sandbox.work_dir / "config"
        before = {name: (config / name).read_bytes() for name in ("bootstrap.php", "wp-config.php", "wp-cli.yml")}
        sandbox.run_php(attack, 60)
        after = {name: (config / name).read_bytes() for name in before}
        check = sandbox.run_php(
            "<?php require '/wordpress/wp-load.php'; echo defined('CODEBOX_OWNED') ? 'owned' : "
            "'intact', ' ', DB_FILE, ' ', CODEBOX_SANDBOX;",
            60,
        )
        sandbox_id = sandbox.id
    assert after == before
    assert check.text == f"intact .ht.sqlite {sandbox_id}", check.text + check.errors


def test_php_and_its_children_cannot_reach_a_host_listener_on_loopback() -> None:
    """A server on the host's 127.0.0.1: `fsockopen`, a stream socket and a child `php` all fail (the sandbox
    has its own empty network namespace) and nothing ever reaches the listener."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        port = server.getsockname()[1]
        attack = textwrap.dedent(f"""\
            <?php
            $s = @fsockopen('127.0.0.1', {port}, $errno, $errstr, 5);
            echo 'fsockopen:', $s ? 'connected' : 'failed', "\\n";
            $t = @stream_socket_client('tcp://127.0.0.1:{port}', $errno, $errstr, 5);
            echo 'stream:', $t ? 'connected' : 'failed', "\\n";
            echo 'child:', shell_exec('php -r ' . escapeshellarg('echo @fsockopen("127.0.0.1", {port}) ? "connected" : "failed";')), "\\n";
            """)
        with native_sandbox() as sandbox:
            result = sandbox.run_php(attack, 60)
        reached = was_reached(server)
    assert result.exit_code == 0, result.errors
    assert result.text.split() == ["fsockopen:failed", "stream:failed", "child:failed"], result.text
    assert not reached


def test_a_sandbox_cannot_write_the_compiled_script_cache_another_sandbox_reads() -> None:
    """The opcache seed is shared by every native sandbox on this home: each gets a private copy, so files a
    sandbox plants or rewrites in its cache never reach the seed or a sandbox booted after it."""
    attack = textwrap.dedent("""\
        <?php
        $root = '/codebox/opcache';
        $it = new RecursiveIteratorIterator(new RecursiveDirectoryIterator($root, FilesystemIterator::SKIP_DOTS));
        $n = 0;
        foreach ($it as $file) { if ($file->isFile() && @file_put_contents($file->getPathname(), 'poisoned')) { $n++; } }
        file_put_contents("$root/planted.bin", 'poisoned');
        echo $n;
        """)
    with native_sandbox() as first:
        seed = next(first.work_dir.parent.parent.glob("native/wp-*/opcache-*/cache"))
        before = {p: p.read_bytes() for p in seed.rglob("*") if p.is_file()}
        result = first.run_php(attack, 60)
        assert result.exit_code == 0 and int(result.text) > 0, result.text + result.errors  # it did poison its own
    with native_sandbox() as second:
        planted = second.run_php(
            "<?php echo file_exists('/codebox/opcache/planted.bin') ? 'planted' : 'clean';"
            " require '/wordpress/wp-load.php'; echo ' ', get_bloginfo('version');",
            60,
        )
    assert {p: p.read_bytes() for p in seed.rglob("*") if p.is_file()} == before
    assert planted.text.startswith("clean ") and planted.exit_code == 0, planted.text + planted.errors


def test_a_sandbox_cannot_reach_another_live_sandboxs_database() -> None:
    """Two native sandboxes at once: the first knows the second's host folder and database path, and tries it
    from PHP, from a `cat` child and through `/proc/*/root`; the second's folder is not in its world."""
    with native_sandbox() as victim, native_sandbox() as attacker:
        database = victim.work_dir / "data" / "wp-content" / "database" / ".ht.sqlite"
        assert database.is_file()
        attack = textwrap.dedent(f"""\
            <?php
            $db = {php_string(str(database))};
            echo 'php:', @file_exists($db) ? 'seen' : 'unseen', "\\n";
            echo 'child:', trim((string) shell_exec('head -c 16 ' . escapeshellarg($db) . ' 2>/dev/null')), "\\n";
            echo 'proc:', trim((string) shell_exec('for p in /proc/[0-9]*; do head -c 16 "$p/root"' . escapeshellarg($db)
                . ' 2>/dev/null; done')), "\\n";
            echo 'own:', trim((string) shell_exec('head -c 15 /wordpress/wp-content/database/.ht.sqlite')), "\\n";
            """)
        result = attacker.run_php(attack, 60)
    assert result.exit_code == 0, result.errors
    assert result.text.split("\n")[:4] == ["php:unseen", "child:", "proc:", "own:SQLite format 3"], result.text


def test_proc_shows_only_the_sandboxs_own_processes() -> None:
    """A host process with a marker in its command line: from inside, `/proc` lists only the sandbox's own PID
    namespace, so the marker cannot be read and the host process cannot be signalled."""
    import subprocess
    import sys

    marker = "HOST-PROCESS-MARKER-5d2e"
    helper = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()", marker], stdin=subprocess.PIPE)
    try:
        attack = textwrap.dedent(f"""\
            <?php
            echo 'pids:', trim((string) shell_exec('ls -d /proc/[0-9]* | wc -l')), "\\n";
            echo 'cmdlines:', shell_exec('cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\\\\0" " "'), "\\n";
            echo 'kill:', trim((string) shell_exec('kill -0 {helper.pid} 2>/dev/null && echo reached || echo refused')), "\\n";
            """)
        with native_sandbox() as sandbox:
            result = sandbox.run_php(attack, 60)
        assert helper.poll() is None  # still running on the host while the sandbox looked for it
    finally:
        helper.communicate(b"")
    assert result.exit_code == 0, result.errors
    assert marker not in result.text, result.text
    assert "kill:refused" in result.text, result.text
    assert 0 < int(result.text.split("pids:", 1)[1].split()[0]) <= 8, result.text


def test_shared_core_cannot_be_changed_through_writes_links_or_renames() -> None:
    """Core is one folder for every native sandbox (and Playground's golden site): writing, chmod-ing,
    unlinking or renaming a core file, or hard-linking it into the writable wp-content and writing through
    the link, from PHP and from a shell, leaves the host's copy as it was."""
    victims = ("/wordpress/wp-includes/version.php", "/wordpress/wp-load.php", "/codebox/sqlite/load.php")
    attack = "<?php\n" + "".join(
        textwrap.dedent(f"""\
        $p = {php_string(name)}; $h = '/wordpress/wp-content/hard-' . md5($p) . '.php';
        @chmod($p, 0666); @file_put_contents($p, '<?php die("owned");', FILE_APPEND); @unlink($p);
        @rename($p, $p . '.moved');
        if (@link($p, $h)) {{ file_put_contents($h, '<?php die("owned");', FILE_APPEND); echo "linked\\n"; }}
        shell_exec('ln ' . escapeshellarg($p) . ' ' . escapeshellarg($h . '2') . ' 2>/dev/null && echo owned >> '
                   . escapeshellarg($h . '2') . '; echo owned >> ' . escapeshellarg($p) . ' 2>/dev/null');
        """)
        for name in victims
    )
    with native_sandbox() as sandbox:
        core = Path(next(b.source for b in sandbox._binds if b.target == "/wordpress"))
        sqlite = Path(next(b.source for b in sandbox._binds if b.target == "/codebox/sqlite"))
        files = [core / "wp-includes" / "version.php", core / "wp-load.php", sqlite / "load.php"]
        before = [(f.read_bytes(), f.stat().st_mode) for f in files]
        result = sandbox.run_php(attack, 60)
    assert "linked" not in result.text, result.text
    assert [(f.read_bytes(), f.stat().st_mode) for f in files] == before
    with native_sandbox() as fresh:
        check = fresh.run_php("<?php require '/wordpress/wp-load.php'; echo get_bloginfo('version');", 60)
    assert check.exit_code == 0 and check.text and "owned" not in check.text, check.text + check.errors


def test_a_read_only_mount_of_a_system_folder_is_bound_as_it_is_and_stays_read_only() -> None:
    """Debian's PHPUnit (``/usr/share/php``), which every PHPUnit run mounts read-only, is already in the
    sandbox's read-only system view at the same path, so it is bound as it is instead of copied per sandbox
    (docs/backends.md): bound read-only, readable by PHP, and writing, chmod-ing, unlinking, renaming or adding a
    file there, from PHP and from a shell, changes nothing on the host."""
    victim = Path("/usr/share/php/PHPUnit/Framework/TestCase.php")
    attack = textwrap.dedent(f"""\
        <?php
        $p = {php_string(str(victim))};
        echo strlen((string) @file_get_contents($p)) > 0 ? "readable\\n" : "unreadable\\n";
        @chmod($p, 0666); @file_put_contents($p, 'owned', FILE_APPEND); @unlink($p); @rename($p, $p . '.moved');
        @file_put_contents('/usr/share/php/planted.php', '<?php die("owned");');
        shell_exec('echo owned >> ' . escapeshellarg($p) . ' 2>/dev/null; touch /usr/share/php/planted2.php 2>/dev/null');
        echo file_exists('/usr/share/php/planted.php') || file_exists('/usr/share/php/planted2.php') ? "planted\\n" : "";
        """)
    before = (victim.read_bytes(), victim.stat().st_mode)
    with native_sandbox(mounts=["/usr/share/php:/usr/share/php:readonly"]) as sandbox:
        bound = [b for b in sandbox._binds if b.target == "/usr/share/php"]
        result = sandbox.run_php(attack, 60)
    assert [(b.source, b.writable) for b in bound] == [("/usr/share/php", False)]  # not a staged copy
    assert "readable" in result.text and "unreadable" not in result.text and "planted" not in result.text, result.text
    assert (victim.read_bytes(), victim.stat().st_mode) == before
    assert not Path("/usr/share/php/planted.php").exists() and not Path("/usr/share/php/planted2.php").exists()


def test_the_hosts_sys_and_proc_stay_out_of_reach() -> None:
    """From a child process (past PHP's open_basedir): the host's /sys (network interfaces and their MAC
    addresses, block devices, DMI serials) is not there at all, and the sandbox's own /proc names no host
    process, network interface or mount beyond the sandbox's own."""
    host_interfaces = sorted(p.name for p in Path("/sys/class/net").iterdir())
    attack = textwrap.dedent("""\
        <?php
        echo 'sys:', trim((string) shell_exec('ls /sys 2>&1 | head -5')), "\\n";
        echo 'net:', trim((string) shell_exec('cat /sys/class/net/*/address 2>&1 | head -3')), "\\n";
        echo 'dmi:', trim((string) shell_exec('cat /sys/class/dmi/id/product_uuid 2>&1')), "\\n";
        echo 'proc-net:', trim((string) shell_exec('cat /proc/net/dev 2>&1 | tail -n +3 | cut -d: -f1 | tr -d " " | tr "\\\\n" ","')), "\\n";
        echo 'mounts:', trim((string) shell_exec('grep -c . /proc/self/mountinfo')), "\\n";
        echo 'host-root:', trim((string) shell_exec('ls /proc/1/root/home /proc/1/root/work 2>&1 | head -2')), "\\n";
        """)
    with native_sandbox() as sandbox:
        result = sandbox.run_php(attack, 60)
    assert result.exit_code == 0, result.errors
    lines = dict(line.split(":", 1) for line in result.text.splitlines() if ":" in line)
    assert "No such file or directory" in lines["sys"], result.text  # /sys is not mounted at all
    assert "No such file or directory" in lines["net"] and "No such file or directory" in lines["dmi"], result.text
    assert [name for name in lines["proc-net"].split(",") if name] == ["lo"], result.text  # its own namespace only
    assert not set(host_interfaces) - {"lo"} & set(lines["proc-net"].split(",")), result.text
    # /proc/1 is bwrap inside the sandbox: its root is the sandbox's (or, when Codebox runs as root and the
    # sandbox does not, not readable at all)
    assert "No such file or directory" in lines["host-root"] or (
        "Permission denied" in lines["host-root"]
        and "home" not in result.text.split("host-root:")[1].replace("/proc/1/root/home", "")
    ), result.text


def test_links_from_wp_content_to_a_host_file_reach_nothing_and_capture_does_not_follow_them(tmp_path: Path) -> None:
    """PHP plants a symbolic link and tries a hard link in a copy-on-write mount and in wp-content, pointing at a
    host file outside the sandbox (its real host path). Reading through them inside finds nothing (the host file
    is not in the sandbox's mount namespace; a hard link cannot cross to it); capture lists the symbolic link as
    skipped and never reads the host file into the bundle."""
    import json

    secret = tmp_path / "host-secret.txt"
    secret.write_text("HOST-SECRET-7f3a")
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "plugin.php").write_text("<?php\n")
    target = "/wordpress/wp-content/plugins/linked"
    attack = textwrap.dedent(f"""\
        <?php
        $secret = {php_string(str(secret))};
        foreach (['{target}/leak-sym', WP_CONTENT_DIR . '/leak-sym'] as $link) {{
            echo 'symlink:', var_export(@symlink($secret, $link), true), "\\n";
            echo 'php-read:', var_export(@file_get_contents($link), true), "\\n";
            echo 'child-read:', shell_exec('cat ' . escapeshellarg($link) . ' 2>&1');
        }}
        foreach (['{target}/leak-hard', WP_CONTENT_DIR . '/leak-hard'] as $link) {{
            echo 'hardlink:', var_export(@link($secret, $link), true), "\\n";
            echo 'child-hardlink:', shell_exec('ln ' . escapeshellarg($secret) . ' ' . escapeshellarg($link) . ' 2>&1');
        }}
        """)
    code_file = tmp_path / "attack.php"
    code_file.write_text(attack)
    (tmp_path / "tmp").mkdir()
    out = run_natively(
        *("--mount", f"{plugin}:{target}", "--command", "wordpress.run-php", "--arg", f"code-file={code_file}"),
        *("--artifacts", str(tmp_path / "artifacts"), "--json"),
        env={"TMPDIR": str(tmp_path / "tmp")},
    )
    doc = json.loads(out.stdout)
    stdout = doc["execution"]["stdout"]
    assert "symlink:true" in stdout, stdout  # the links were planted: the attack ran
    assert "HOST-SECRET-7f3a" not in stdout + doc["execution"].get("stderr", ""), stdout
    assert "hardlink:true" not in stdout, stdout
    run_dir = Path(doc["artifacts"]["directory"])
    changed = json.loads((run_dir / "files" / "changed-files.json").read_text())
    assert {(s["relativePath"], s["reason"]) for s in changed["skipped"]} == {("leak-sym", "symlink")}, changed
    assert not any(f["path"].endswith(("leak-sym", "leak-hard")) for f in changed["files"]), changed
    for path in run_dir.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert b"HOST-SECRET-7f3a" not in path.read_bytes(), path
    assert secret.read_text() == "HOST-SECRET-7f3a" and not (plugin / "leak-sym").exists()


# -- the preview: page requests through php-cgi and the host's relay (docs/backends.md) ---------------------
# A must-use plugin playing the attacker in page requests, driven by query: reach the host's loopback or a
# host file, flood the response's headers or body, send bytes no header should hold.
PREVIEW_ATTACKER = r"""<?php
$codebox_attack = isset( $_GET['codebox-attack'] ) ? $_GET['codebox-attack'] : '';
if ( $codebox_attack === 'reach' ) {
	$out = array();
	foreach ( explode( ',', $_GET['ports'] ) as $port ) {
		$s = @fsockopen( '127.0.0.1', (int) $port, $errno, $errstr, 5 );
		$out[] = 'php:' . ( $s ? 'connected' : 'failed' );
		$out[] = 'child:' . shell_exec( 'php -r ' . escapeshellarg( 'echo @fsockopen("127.0.0.1", ' . (int) $port . ') ? "connected" : "failed";' ) );
	}
	$out[] = 'file:' . @file_get_contents( $_GET['file'] );
	$out[] = 'cat:' . shell_exec( 'cat ' . escapeshellarg( $_GET['file'] ) . ' 2>&1' );
	echo implode( "\n", $out );
	exit;
}
if ( $codebox_attack === 'many-headers' ) {
	for ( $i = 0; $i < 500; $i++ ) { header( "X-Flood-$i: x" ); }
	exit;
}
if ( $codebox_attack === 'huge-headers' ) {
	for ( $i = 0; $i < 40; $i++ ) { header( "X-Huge-$i: " . str_repeat( 'h', 4000 ) ); }
	exit;
}
if ( $codebox_attack === 'forge-report' ) {
	header( 'X-Codebox-Problems: none' );
	header( 'x-codebox-truncated: no' );
	echo 'forged';
	exit;
}
if ( $codebox_attack === 'huge-body' ) {
	header( 'X-Odd: ' . "\x01\x7f\xfe\xff-end" );
	$chunk = str_repeat( 'b', 1 << 20 );
	for ( $i = 0; $i < 40; $i++ ) { echo $chunk; }
	exit;
}
"""


@pytest.fixture(scope="module")
def preview_sandbox() -> Iterator[Any]:
    with native_sandbox() as sandbox:
        sandbox.write_file("/wordpress/wp-content/mu-plugins/codebox-attacker.php", PREVIEW_ATTACKER.encode())
        yield sandbox


def _port(sandbox: Any) -> int:
    return int(sandbox.preview_url.rsplit(":", 1)[1])


def test_the_preview_relay_listens_on_127_0_0_1_only(preview_sandbox: Any) -> None:
    """Another loopback address and the machine's own addresses find nothing at the relay's port; only
    127.0.0.1 answers."""
    port = _port(preview_sandbox)
    assert raw_http(port, "GET /wp-includes/images/blank.gif")[0] == 200
    others = {"127.0.0.2"} | {
        info[4][0]
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
        if not info[4][0].startswith("127.")
    }
    for address in sorted(others):
        with pytest.raises(OSError):
            socket.create_connection((address, port), timeout=5).close()


def test_the_preview_relay_answers_only_to_its_own_name(preview_sandbox: Any) -> None:
    """DNS rebinding: a page on another site whose name now resolves to 127.0.0.1 reaches the port, but its
    requests carry that site's name; the relay refuses them before any PHP runs."""
    port = _port(preview_sandbox)
    for name in (f"rebound.example:{port}", "rebound.example", f"127.0.0.1:{port + 1}", ""):
        status, _, body = raw_http(port, "GET /", host_header=name)
        assert status == 421 and b"<html" not in body.lower(), (name, status)
    assert raw_http(port, "GET /wp-includes/images/blank.gif", host_header=f"localhost:{port}")[0] == 200


def test_a_page_request_cannot_reach_the_host_loopback_or_read_a_host_file(preview_sandbox: Any) -> None:
    """The page's PHP and a child it starts try a listener on the host's 127.0.0.1 and the relay itself, and
    a marker in the host's /tmp: the request's network namespace is empty and the host's files absent."""
    import tempfile

    with (
        socket.socket() as server,
        tempfile.NamedTemporaryFile("w", prefix="codebox-preview-marker-", dir="/tmp", suffix=".txt") as marker,
    ):
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        marker.write("HOST-MARKER-77e1")
        marker.flush()
        ports = f"{server.getsockname()[1]},{_port(preview_sandbox)}"
        response = preview_sandbox.request(f"/?codebox-attack=reach&ports={ports}&file={marker.name}", 120)
        server.setblocking(False)
        with pytest.raises(BlockingIOError):
            server.accept()
    lines = response.text.splitlines()
    assert lines[:4] == ["php:failed", "child:failed", "php:failed", "child:failed"], response.text[:2000]
    assert "HOST-MARKER-77e1" not in response.text and "No such file or directory" in response.text


def test_a_flood_of_headers_or_a_huge_body_is_capped_and_reported(preview_sandbox: Any) -> None:
    """Header blocks past the caps (too many lines, too many bytes) are refused with a 502 that says why; a
    body past its cap is cut and flagged; bytes no header may hold are dropped; the relay keeps serving."""
    from codebox_tui.runtime.native_cgi import MAX_BODY_BYTES

    many = preview_sandbox.request("/?codebox-attack=many-headers", 120)
    assert many.status == 502 and "header lines" in many.text, (many.status, many.text[:300])
    huge = preview_sandbox.request("/?codebox-attack=huge-headers", 120)
    assert huge.status == 502 and "no end of headers" in huge.text, (huge.status, huge.text[:300])
    status, headers, body = raw_http(_port(preview_sandbox), "GET /?codebox-attack=huge-body")
    assert status == 200 and len(body) == MAX_BODY_BYTES
    assert "cut at" in headers["x-codebox-problems"]
    assert headers["x-odd"] == "\xfe\xff-end"  # control bytes dropped, the line kept
    assert raw_http(_port(preview_sandbox), "GET /?codebox-attack=many-headers")[0] == 502
    assert raw_http(_port(preview_sandbox), "GET /wp-includes/images/blank.gif")[0] == 200


@pytest.mark.skipif(os.geteuid() != 0, reason="the process cap holds where the sandbox has a host uid of its own")
def test_a_fork_bomb_stops_at_the_sandbox_process_cap(preview_sandbox: Any) -> None:
    """PHP starts 400 sleeping children (a bounded fork bomb): when Codebox runs as root the sandbox runs as a uid
    of its own on the host, whose process count ``prlimit --nproc`` caps (its ``pids`` group, lower, stops them
    first), so the children stop at the cap; they die with the command."""
    from codebox_tui.runtime.native import MAX_SANDBOX_PROCESSES

    bomb = (
        "<?php $n = 0; $procs = []; for ($i = 0; $i < 400; $i++) {"
        " $p = @proc_open(['sleep', '30'], [], $pipes); if ($p === false) { break; } $procs[] = $p; $n++; }"
        " echo $n;"
    )
    result = preview_sandbox.run_php(bomb, 120)
    assert result.exit_code == 0, result.errors
    assert 0 < int(result.text) < MAX_SANDBOX_PROCESSES, result.text  # without the cap: all 400


def test_a_page_cannot_write_the_relays_own_report_headers(preview_sandbox: Any) -> None:
    """``x-codebox-problems`` is the host's report on a response (a cut body, skipped lines): a page that sends
    its own (``none``, to hide a cut) has it dropped and counted, through the relay and in what the host records."""
    status, headers, body = raw_http(_port(preview_sandbox), "GET /?codebox-attack=forge-report")
    assert status == 200 and body == b"forged"
    assert headers.get("x-codebox-problems") == "2 malformed header line(s) skipped", headers
    assert "x-codebox-truncated" not in headers, headers
    recorded = preview_sandbox.request("/?codebox-attack=forge-report", 120)
    assert not [name for name in recorded.headers if name.startswith("x-codebox-")], recorded.headers


def test_idle_connections_cannot_pile_up_threads_in_the_relay(preview_sandbox: Any) -> None:
    """Slowloris: 150 connections that send half a request line and wait. The relay holds at most
    MAX_CONNECTIONS of them (one thread each, in Codebox's own process) and closes the rest unread; once they
    go, it serves again."""
    import threading

    from codebox_tui.runtime.native_preview_http import MAX_CONNECTIONS
    from tests.factories.waiting import wait_until

    port = _port(preview_sandbox)
    before = threading.active_count()
    idle: list[socket.socket] = []

    def closed_by_relay() -> int:
        count = 0
        for connection in idle:
            try:
                count += connection.recv(1, socket.MSG_PEEK) == b""
            except BlockingIOError:
                pass
        return count

    try:
        for _ in range(150):
            connection = socket.create_connection(("127.0.0.1", port), timeout=30)
            connection.sendall(b"GET / HTTP/1.1\r\n")
            connection.setblocking(False)  # closed_by_relay peeks without waiting
            idle.append(connection)
        # every connection taken: held by a thread, or closed unread
        wait_until(lambda: threading.active_count() - before + closed_by_relay() >= len(idle), timeout=60)
        held = threading.active_count() - before
    finally:
        for connection in idle:
            connection.close()
    assert held <= MAX_CONNECTIONS, held  # without the cap: one thread per connection, 150
    wait_until(lambda: threading.active_count() <= before, timeout=60)
    assert raw_http(port, "GET /wp-includes/images/blank.gif")[0] == 200


def test_the_relay_serves_no_file_outside_the_site(preview_sandbox: Any) -> None:
    """Traversal in the request path (plain, percent-encoded, encoded slashes) and symbolic links planted in
    uploads by a child process (to the sandbox's own configuration, its /tmp and the host's /etc/passwd) serve
    none of those files: the router serves only what resolves inside /wordpress, read by PHP inside the wall."""
    secrets_text = (preview_sandbox.work_dir / "config" / "bootstrap.php").read_text()
    auth_key = re.search(r"define\('AUTH_KEY', '([0-9a-f]+)'\)", secrets_text)
    assert auth_key
    planted = preview_sandbox.run_php(
        textwrap.dedent("""\
        <?php
        file_put_contents('/tmp/private.txt', 'SANDBOX-TMP-5c2d');
        $u = '/wordpress/wp-content/uploads';
        echo shell_exec("cd $u && ln -s /codebox/config/bootstrap.php leak.txt && ln -s /codebox/config conf"
            . " && ln -s /tmp/private.txt tmp.txt && ln -s /etc/passwd passwd.txt && ls $u 2>&1");
        """),
        60,
    )
    assert {"leak.txt", "conf", "tmp.txt", "passwd.txt"} <= set(planted.text.split()), planted.text + planted.errors
    paths = [
        "/../../etc/passwd",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/..%2f..%2fetc%2fpasswd",
        "/wp-content/uploads/..%2f..%2f..%2fcodebox/config/bootstrap.txt",
        "/%2E%2E/codebox/config/wp-cli.yml",
        "/wp-content/%2e%2e/%2e%2e/tmp/private.txt",
        "/wp-content/uploads/leak.txt",
        "/wp-content/uploads/conf/wp-cli.yml",
        "/wp-content/uploads/tmp.txt",
        "/wp-content/uploads/passwd.txt",
        "/wp-content/uploads/conf/",
        "//etc/passwd",
        "/./codebox/config/wp-cli.yml",
    ]
    for path in paths:
        status, _, body = raw_http(_port(preview_sandbox), f"GET {path}")
        text = body.decode("utf-8", "replace")
        for secret in (auth_key.group(1), "root:x:0:0", "SANDBOX-TMP-5c2d", "path: /wordpress"):
            assert secret not in text, (path, status, text[:300])
        assert status in (301, 302, 400, 403, 404) or (status == 200 and "<html" in text.lower()), (path, status)


# -- the persistent page-request worker (runtime/native_worker.py) and the process cap ----------------------
# A must-use plugin that reports what an earlier request of the same worker left behind, then plants all of
# it: a global, a static, a constant, a class, an ini setting and an environment variable.
STATE_PLANTER = r"""<?php
if ( isset( $_GET['codebox-state'] ) ) {
	function codebox_counter() { static $n = 0; return ++$n; }
	$seen = array(
		'global' => isset( $GLOBALS['codebox_planted'] ) ? 'leaked' : 'clean',
		'static' => codebox_counter(),
		'const' => defined( 'CODEBOX_PLANTED' ) ? 'leaked' : 'clean',
		'class' => class_exists( 'Codebox_Planted', false ) ? 'leaked' : 'clean',
		'ini' => ini_get( 'precision' ),
		'env' => getenv( 'CODEBOX_PLANTED' ) === false ? 'clean' : 'leaked',
	);
	$GLOBALS['codebox_planted'] = 1;
	define( 'CODEBOX_PLANTED', 1 );
	eval( 'class Codebox_Planted {}' );
	ini_set( 'precision', '3' );
	putenv( 'CODEBOX_PLANTED=1' );
	codebox_counter();
	$reach = array();
	foreach ( explode( ',', isset( $_GET['sockets'] ) ? $_GET['sockets'] : '' ) as $path ) {
		if ( $path !== '' ) {
			$reach[] = @stream_socket_client( 'unix://' . $path, $errno, $errstr, 2 ) ? 'connected' : 'failed';
			$reach[] = trim( (string) shell_exec( 'php -r ' . escapeshellarg( 'echo @stream_socket_client("unix://' . $path . '") ? "connected" : "failed";' ) ) );
		}
	}
	header( 'Content-Type: application/json' );
	echo json_encode( array( 'pid' => getmypid(), 'sandbox' => CODEBOX_SANDBOX, 'seen' => $seen, 'reach' => $reach,
		'sockets' => trim( (string) shell_exec( 'find / -xdev -type s 2>/dev/null; find /codebox /tmp /wordpress -type s 2>/dev/null' ) ) ) );
	exit;
}
if ( isset( $_GET['codebox-fork-bomb'] ) ) {
	$n = 0;
	$held = array();
	for ( $i = 0; $i < 400; $i++ ) {
		$process = @proc_open( array( 'sleep', '300' ), array(), $pipes );
		if ( $process === false ) {
			break;
		}
		$held[] = $process;
		$n++;
	}
	echo $n;
	exit;
}
"""
# The same bomb as a command: as many processes as PHP can start, up to 400 (a bound of its own, so the test
# cannot hurt the machine when the cap is missing).
FORK_BOMB = (
    "<?php $n = 0; $held = []; for ($i = 0; $i < 400; $i++) {"
    " $p = @proc_open(['sleep', '300'], [], $pipes); if ($p === false) { break; } $held[] = $p; $n++; } echo $n;"
)


@pytest.fixture(scope="module")
def worker_sandbox(preview_sandbox: Any) -> Any:
    preview_sandbox.write_file("/wordpress/wp-content/mu-plugins/codebox-state.php", STATE_PLANTER.encode())
    return preview_sandbox


def test_state_set_in_one_request_is_gone_in_the_next_one_served_by_the_same_worker(worker_sandbox: Any) -> None:
    """Each request plants a global, a static, a constant, a class, an ini setting and an environment
    variable, and reports what it found first: the worker's processes (two) serve the six requests, so some
    process serves several of them, and none of them finds anything an earlier one planted."""
    answers = [json.loads(worker_sandbox.request("/?codebox-state=1", 120).text) for _ in range(6)]
    pids = [answer["pid"] for answer in answers]
    assert len(set(pids)) < len(pids), pids  # one process served more than one request
    for answer in answers:
        assert answer["seen"] == {
            "global": "clean",
            "static": 1,
            "const": "clean",
            "class": "clean",
            "ini": "14",
            "env": "clean",
        }, answers


def test_a_sandboxs_requests_are_served_by_its_own_worker_only(worker_sandbox: Any) -> None:
    """Two live sandboxes, requests interleaved: each answer comes from its own sandbox. The attacker's pages
    (PHP and a child) know the other sandbox's worker socket on the host, and its own, and try both; no worker
    socket is visible anywhere inside the sandbox."""
    with native_sandbox() as other:
        other.write_file("/wordpress/wp-content/mu-plugins/codebox-state.php", STATE_PLANTER.encode())
        assert other.request("/?codebox-state=1", 120).status == 200  # its worker is running
        targets = [other.work_dir / "worker" / "php-fcgi.sock", worker_sandbox.work_dir / "worker" / "php-fcgi.sock"]
        assert all(target.is_socket() for target in targets)
        sockets = ",".join(str(target) for target in targets)
        for _ in range(3):
            mine = json.loads(worker_sandbox.request(f"/?codebox-state=1&sockets={sockets}", 120).text)
            theirs = json.loads(other.request("/?codebox-state=1", 120).text)
            assert (mine["sandbox"], theirs["sandbox"]) == (worker_sandbox.id, other.id)
            assert mine["reach"] == ["failed"] * 4 and mine["sockets"] == "", mine
            assert mine["seen"]["global"] == theirs["seen"]["global"] == "clean"


def test_a_fork_bomb_stops_at_the_sandboxs_process_cap(worker_sandbox: Any) -> None:
    """A command and a page each start as many processes as they can (up to 400): both stop below the
    sandbox's cap (a pids control group counting every process of the sandbox, as root too), and the sandbox
    still serves once the worker holding the page's processes is stopped."""
    from codebox_tui.runtime.native_limits import MAX_PROCESSES

    cap = worker_sandbox.process_cap
    assert cap.folder is not None, cap.reason
    command = worker_sandbox.run_php(FORK_BOMB, 120)
    assert command.exit_code == 0, command.errors
    assert 0 < int(command.text) < MAX_PROCESSES, command.text
    page = worker_sandbox.request("/?codebox-fork-bomb=1", 120)
    assert page.status == 200 and 0 < int(page.text) < MAX_PROCESSES, page.text[:300]
    assert cap.current() == MAX_PROCESSES  # the page's processes are held by the worker, at the cap
    worker_sandbox.worker.stop()
    assert wait_until(lambda: cap.current() == 0), cap.current()
    assert worker_sandbox.request("/wp-includes/images/blank.gif", 120).status == 200


# Disk fill, many files at a time: 1 MiB files (each far under the per-file cap) into the sandbox's /tmp and
# uploads from PHP until a write fails (at most 48), then a `dd` child writing 20 MiB more.
DISK_FILL = (
    "<?php $n = 0; foreach (['/tmp', '/wordpress/wp-content/uploads'] as $d) { for ($i = 0; $i < 24; $i++) {"
    " if (@file_put_contents(\"$d/fill-$i.bin\", str_repeat('x', 1 << 20)) !== (1 << 20)) { break; } $n++; } }"
    " echo $n, \"\\n\", shell_exec('dd if=/dev/zero of=/tmp/dd.bin bs=1M count=20 2>&1');"
)


def test_many_files_each_under_the_file_cap_stop_at_the_sandboxs_disk_budget() -> None:
    """With an 8 MiB write budget, PHP and a child keep writing 1 MiB files: the writes fail once the
    sandbox's data (its own size-limited file system) is full, the command says so and the run is flagged;
    the host's disk holds nothing of it, and the file system is gone with the sandbox."""
    budget = 8 << 20
    with native_sandbox(settings=get_settings().model_copy(update={"sandbox_write_budget": budget})) as sandbox:
        disk = sandbox.disk
        assert disk.mounted, disk.reason
        result = sandbox.run_php(DISK_FILL, 120)
        written, dd = result.text.split("\n", 1)
        assert 0 < int(written) <= budget >> 20, result.text
        assert "No space left on device" in dd, dd
        assert "write budget" in result.errors and sandbox.write_budget_exceeded() is not None
        usage = sandbox.run_php(
            "<?php echo (int) shell_exec('du -sk /tmp /wordpress/wp-content/uploads | cut -f1 | paste -sd+ | bc');", 60
        )
        assert int(usage.text) * 1024 <= budget + (1 << 20), usage.text + usage.errors
        assert sandbox.request("/wp-includes/images/blank.gif", 120).status == 200  # reads still work
        folder = disk.folder
    assert not folder.exists() and str(folder) not in Path("/proc/self/mounts").read_text()


# Into a copy-on-write mount: 1 MiB files from PHP until a write fails (at most 24), then a `dd` child writing
# 20 MiB and a `cp` child copying a file already there; then what the mount holds, as `du` sees it inside.
MOUNT_FILL = textwrap.dedent("""\
    <?php
    $d = '/wordpress/wp-content/plugins/filled';
    $n = 0;
    for ($i = 0; $i < 24; $i++) {
        if (@file_put_contents("$d/fill-$i.bin", str_repeat('x', 1 << 20)) !== (1 << 20)) { break; }
        $n++;
    }
    echo 'php-files:', $n, "\\n";
    echo 'dd:', shell_exec("dd if=/dev/zero of=$d/dd.bin bs=1M count=20 2>&1");
    echo 'cp:', shell_exec("cp $d/fill-0.bin $d/copy.bin 2>&1"), "\\n";
    echo 'du-kib:', (int) shell_exec("du -sk $d | cut -f1"), "\\n";
    """)


def test_many_files_written_into_a_read_write_mount_stop_at_the_same_disk_budget(tmp_path: Path) -> None:
    """A read-write mount's private copy is written by PHP and by child processes (`dd`, `cp`), every file under
    the per-file cap (an 8 MiB budget): the writes stop at the sandbox's one budget with "No space left on
    device", the command's stderr says the budget is spent, the run is flagged, and what reached the host (the
    mount as captured) is within the budget; the user's folder is untouched and no mount is left behind."""
    budget = 8 << 20
    plugin = tmp_path / "filled"
    plugin.mkdir()
    (plugin / "filled.php").write_text("<?php\n// Plugin Name: Filled\n")
    code_file = tmp_path / "fill.php"
    code_file.write_text(MOUNT_FILL)
    (tmp_path / "tmp").mkdir()
    home = str(get_settings().home)
    mounted_before = {point for point in mount_points() if point.startswith(home)}  # this process's own sandboxes
    out = codebox(
        Path(home),
        *("run", "--backend", "native", "--mount", f"{plugin}:/wordpress/wp-content/plugins/filled"),
        *("--command", "wordpress.run-php", "--arg", f"code-file={code_file}"),
        *("--artifacts", str(tmp_path / "artifacts"), "--json"),
        env={"TMPDIR": str(tmp_path / "tmp"), "CODEBOX_SANDBOX_WRITE_BUDGET": str(budget)},
    )
    doc = json.loads(out.stdout)
    stdout = doc["execution"]["stdout"]
    report = dict(line.split(":", 1) for line in stdout.splitlines() if re.match(r"^(php-files|du-kib):", line))
    assert 0 < int(report["php-files"]) <= budget >> 20, stdout
    assert stdout.count("No space left on device") >= 2, stdout  # the dd child, then the cp child
    assert int(report["du-kib"]) * 1024 <= budget + (1 << 20), stdout
    assert "write budget" in doc["execution"]["stderr"], doc["execution"]
    bundle = Path(doc["artifacts"]["directory"])
    assert "write-budget-exceeded" in json.loads((bundle / "files" / "review.json").read_text())["riskFlags"]
    changed = json.loads((bundle / "files" / "changed-files.json").read_text())["files"]
    assert {"fill-0.bin", "dd.bin"} <= {c["relativePath"] for c in changed}, changed  # capture saw the writes
    assert sum(c.get("afterSize") or 0 for c in changed) <= budget, changed
    assert sorted(p.name for p in plugin.iterdir()) == ["filled.php"]  # copy-on-write: the user's folder as it was

    def left() -> set[str]:  # the CLI's reaper or its mount guard detaches the copy's overlay once it has ended
        return {point for point in mount_points() if point.startswith(home)} - mounted_before

    assert wait_until(lambda: not left(), timeout=60), f"mounts outlived the run: {left()}"
