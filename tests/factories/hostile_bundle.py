"""A bundle with hostile text, captured through a real Playground run: PHP inside the sandbox edits a
tab-indented plugin file and writes a file whose content and name carry ESC sequences, carriage returns,
C1 controls, DEL and Unicode bidi overrides (what a malicious patch would use to redraw or hide parts of
a reviewer's screen). Used by ``tests/security/test_diffs_hostile_text.py`` and, to refresh the committed
patch the snapshots use (``tests/fixtures/hostile-playground.patch``), by ``python -m tests.factories.hostile_bundle``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.factories.screenshots import HOSTILE_PATCH as FIXTURE_PATCH
from tests.factories.screenshots import PLUGIN_TARGET, build_hostile_bundle, make_tabbed_plugin

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


make_plugin = make_tabbed_plugin


def recorded_patch() -> str:
    """``files/patch.diff`` of a real run of ``PHP`` (``capture`` checks a fresh run still writes it)."""
    return FIXTURE_PATCH.read_bytes().decode("utf-8")


def build_recorded_bundle(work: Path) -> Path:
    """A deterministic bundle for snapshots: the plugin with the recorded patch of the real run applied
    exactly, captured by the real capture code with a fixed clock (``tests.factories.screenshots``)."""
    return build_hostile_bundle(work)


def capture(run_factory: Any, root: Path) -> Path:
    """Run the hostile PHP in a real sandbox with the tab-indented plugin mounted; return the bundle."""
    plugin = make_plugin(root)
    run = run_factory(mounts=[f"{plugin}:{PLUGIN_TARGET}"], commands=["wordpress.run-php"])
    result = run.execute("wordpress.run-php", [f"code={PHP}"])
    assert result.exitCode == 0, result
    summary = run.capture()
    return Path(summary.path)


if __name__ == "__main__":  # refresh the recorded patch from a real run: python -m tests.factories.hostile_bundle
    import tempfile

    from codebox_tui.runtime.session import RunSession
    from codebox_tui.settings import get_settings
    from tests.factories.playground import PlaygroundSession

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
