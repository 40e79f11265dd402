"""Codebox: review workstation for disposable WordPress Playground sandboxes.

The core (contracts, runtime, bundle, recipes, browser, cli) never imports Textual;
only ``codebox_tui.app`` and ``codebox_tui.screens`` do.
"""

__version__ = "0.1.0"
