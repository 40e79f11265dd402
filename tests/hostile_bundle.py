"""A bundle with hostile text, captured through a real Playground run: PHP inside the sandbox edits a
tab-indented plugin file and writes a file whose content and name carry ESC sequences, carriage returns,
C1 controls, DEL and Unicode bidi overrides (what a malicious patch would use to redraw or hide parts of
a reviewer's screen). Used by ``tests/security/test_diffs_hostile_text.py`` and, to refresh the committed
patch the snapshots use (``tests/fixtures/hostile-playground.patch``), by ``python -m tests.hostile_bundle``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

PLUGIN_TARGET = "/wordpress/wp-content/plugins/tabbed"

# WordPress style: tab-indented, tabs also between code and trailing comments.
TABBED_PLUGIN = (
    "<?php\n"
    "/**\n"
    " * Plugin Name: Tabbed\n"
    " */\n"
    "\n"
    "add_action( 'init', static function (): void {\n"
    "\tif ( is_admin() ) {\n"
    "\t\t$greeting = 'Hello';\t\t// Fixture hook\n"
    "\t\tadd_filter( 'the_title', static fn ( $t ) => $t . $greeting );\n"
    "\t}\n"
    "} );\n"
)

# PHP run inside the sandbox. chr()/\u{} build the control characters there, so the hostile bytes are
# written by the sandbox itself, as an attacker's code would.
PHP = r"""
$d = WP_PLUGIN_DIR . '/tabbed';
$e = chr(27); $cr = chr(13); $bel = chr(7); $del = chr(127);
$csi = "\u{009B}"; $rlo = "\u{202E}"; $lri = "\u{2066}"; $pdi = "\u{2069}";
file_put_contents("$d/tabbed.php", str_replace("'Hello'", "'Howdy'", file_get_contents("$d/tabbed.php")));
$body = "<?php\n"
  . "\t\$clear = \"{$e}[2J{$e}[Hscreen cleared\";\t// ESC sequences\n"
  . "\techo 'visible';{$cr}\techo 'overwritten';\n"
  . "\t\$isAdmin = false; /*{$rlo} } {$lri}if (\$isAdmin){$pdi} {$lri} begin admins only */\n"
  . "\t\$c1 = \"{$csi}31m red via C1\"; \$del = \"x{$del}y\";\n"
  . "\t\$title = \"{$e}]0;pwned{$bel}\";\n";
file_put_contents("$d/notes-{$e}[31m{$rlo}txt.php", $body);
echo 'written';
"""

HOSTILE_NAME = "notes-\x1b[31m\u202etxt.php"


def make_plugin(root: Path) -> Path:
    plugin = root / "tabbed"
    plugin.mkdir(parents=True)
    (plugin / "tabbed.php").write_text(TABBED_PLUGIN)
    return plugin


FIXTURE_PATCH = Path(__file__).resolve().parent / "fixtures" / "hostile-playground.patch"
FIXED_CREATED = "2026-11-22T12:00:00.000Z"


def recorded_patch() -> str:
    """``files/patch.diff`` of a real run of ``PHP`` (``capture`` checks a fresh run still writes it)."""
    return FIXTURE_PATCH.read_bytes().decode("utf-8")


def build_recorded_bundle(work: Path) -> Path:
    """A deterministic bundle for snapshots: the plugin, with the recorded patch of the real run applied
    exactly (``store.patchtext.apply_block``), captured by the real capture code with a fixed clock."""
    from codebox_tui.bundle.baseline import take_baselines
    from codebox_tui.bundle.capture import capture_bundle
    from codebox_tui.bundle.patchparse import split_sections
    from codebox_tui.contracts.runtime import MountSpec, RuntimeInfo, RuntimePolicy
    from store.patchtext import apply_block

    plugin = make_plugin(work)
    mount = MountSpec(source=str(plugin), target=PLUGIN_TARGET)
    baselines = take_baselines([mount], work / "scratch")
    for section in split_sections(recorded_patch()):
        target = plugin / section.path
        before = target.read_bytes() if target.exists() else None
        target.write_bytes(apply_block(before, section.text.encode("utf-8")))
    run_dir = work / "run"
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / "events.jsonl").write_text(
        '{"data": {"command": "wordpress.run-php"}, "id": "event-0", "level": "info", '
        '"timestamp": "2026-11-22T12:00:00.000Z", "type": "command.started"}\n')
    runtime = RuntimeInfo(id="runtime-hostile", createdAt=FIXED_CREATED,
                          environment={"wordpressVersion": "6.5.5", "phpVersion": "8.3"})
    summary = capture_bundle(run_dir, runtime=runtime, mounts=[mount], baselines=baselines,
                             policy=RuntimePolicy(commands=["wordpress.run-php"]), metadata={},
                             secret_values=[], evidence=[], test_suites=[])
    return Path(summary.path)


def capture(run_factory: Any, root: Path) -> Path:
    """Run the hostile PHP in a real sandbox with the tab-indented plugin mounted; return the bundle."""
    plugin = make_plugin(root)
    run = run_factory(mounts=[f"{plugin}:{PLUGIN_TARGET}"], commands=["wordpress.run-php"])
    result = run.execute("wordpress.run-php", [f"code={PHP}"])
    assert result.exitCode == 0, result
    summary = run.capture()
    return Path(summary.path)


if __name__ == "__main__":  # refresh the recorded patch from a real run: python -m tests.hostile_bundle
    import tempfile

    from codebox_tui.runtime.session import RunSession
    from codebox_tui.settings import get_settings
    from tests.conftest import PlaygroundSession

    with tempfile.TemporaryDirectory() as scratch:
        helper = PlaygroundSession(get_settings().home)
        runs: list[RunSession] = []

        def factory(**kwargs: Any) -> RunSession:
            run = helper.new_run(Path(scratch) / "artifacts", **kwargs)
            runs.append(run)
            return run

        try:
            bundle = capture(factory, Path(scratch))
        finally:
            for run in runs:
                run.close()
        FIXTURE_PATCH.write_bytes((bundle / "files" / "patch.diff").read_bytes())
        print(FIXTURE_PATCH)
