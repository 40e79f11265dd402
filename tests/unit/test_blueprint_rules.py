"""Which blueprints may have run code under review (recipes/blueprint.reviewed_code_ran; docs/site-state.md)."""

from codebox_tui.recipes.blueprint import reviewed_code_ran, runs_php

RUN_PHP = {"steps": [{"step": "runPHP", "code": "<?php echo 1;"}]}


def test_a_run_php_blueprint_with_plugin_mounts_ran_no_reviewed_code() -> None:
    assert runs_php(RUN_PHP)
    assert reviewed_code_ran(RUN_PHP, ["/wordpress/wp-content/plugins/demo", "/wordpress/wp-content/plugins"]) is None


def test_a_mount_loaded_with_wordpress_or_an_activation_step_ran_reviewed_code() -> None:
    assert "mu-plugins" in str(reviewed_code_ran(RUN_PHP, ["/wordpress/wp-content/mu-plugins/x"]))
    assert "db.php" in str(reviewed_code_ran(RUN_PHP, ["/wordpress/wp-content/db.php"]))
    activate = {"steps": [*RUN_PHP["steps"], {"step": "activatePlugin", "pluginPath": "demo/demo.php"}]}
    assert "activatePlugin" in str(reviewed_code_ran(activate, []))
    assert not runs_php({"steps": [{"step": "writeFile", "path": "/x", "data": ""}]})
