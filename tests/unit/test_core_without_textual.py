"""The core must import and run its CLI without Textual (the TUI is optional at import time)."""

from __future__ import annotations

import subprocess
import sys

CORE_MODULES = [
    "codebox_tui.cli",
    "codebox_tui.contracts.runtime",
    "codebox_tui.runtime.catalog",
    "codebox_tui.errors",
    "codebox_tui.settings",
    "store",
]


def test_core_imports_do_not_load_textual() -> None:
    code = (
        "import importlib, sys\n"
        f"for name in {CORE_MODULES!r}:\n"
        "    importlib.import_module(name)\n"
        "loaded = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(','.join(loaded))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"core pulled in Textual modules: {out.stdout.strip()}"


def test_core_works_when_textual_is_unimportable() -> None:
    # A meta-path hook that refuses Textual proves the CLI's non-TUI commands never need it.
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'textual' or name.startswith('textual.'):\n"
        "            raise ImportError('textual blocked for this test')\n"
        "        return None\n"
        "sys.meta_path.insert(0, Block())\n"
        "from codebox_tui.cli import main\n"
        "sys.argv = ['codebox', 'commands', '--json']\n"
        "main()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert '"wp-codebox/command-catalog/v1"' in out.stdout
