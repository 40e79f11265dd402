"""Names scripts/dead_code.py must not report: each is called by a framework or kept on purpose, as said.
Vulture reads this file as code that uses the names; it is never imported."""

# ruff: noqa: B018
_ = object()

# Click calls this override of TyperGroup to list the root command's sub-commands (cli/__init__.py).
_.list_commands

# bundle/layout.py names every bundle path; docs/site-state.md documents this one for snapshot writers.
_.runtime_snapshot_blob_path

# scripts/reference_interop.py calls it inside the reference checker's own Python (a code string).
_.block_for

# Command handlers: runtime/catalog.py names each as "module:function" and handler_for imports it when its
# command runs (on demand, so a run loads only its own command's module).
_.browser_probe
_.browser_actions
_.inspect_mounted_inputs
_.wp_cli
_.ability
_.capture_state_bundle
_.core_phpunit
