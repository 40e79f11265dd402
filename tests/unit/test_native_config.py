"""The native backend's pure rules: backend names, the PHP it accepts, its generated configuration
(runtime/backends.py, runtime/native_site.py). The host's real PHP answers the version questions."""

from __future__ import annotations

from pathlib import Path

import pytest

from codebox_tui.errors import BadInputError
from codebox_tui.runtime.backends import backend_name, check_php, default_php
from codebox_tui.runtime.native_site import bootstrap_php, host_php, open_basedir, salt_key, salts


def test_backend_names_are_checked_and_default_to_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from codebox_tui.settings import reload_settings

    assert backend_name("native") == "native"
    with pytest.raises(BadInputError) as caught:
        backend_name("docker")
    assert caught.value.code == "unknown-backend" and "playground, native" in caught.value.message
    monkeypatch.setenv("CODEBOX_BACKEND", "native")
    try:
        assert backend_name(None, reload_settings()) == "native"
    finally:
        monkeypatch.delenv("CODEBOX_BACKEND")
        reload_settings()


def test_native_runs_the_hosts_php_only_and_names_the_way_out() -> None:
    series = host_php().series
    assert default_php("native") == series
    check_php("native", series)
    check_php("native", host_php().version)
    with pytest.raises(BadInputError) as caught:
        check_php("native", "7.4")
    assert caught.value.code == "native-php-version" and caught.value.field == "php"
    assert "--backend playground" in caught.value.message
    check_php("playground", "7.4")
    with pytest.raises(BadInputError):
        check_php("playground", "5.6")


def test_open_basedir_adds_only_mount_targets_outside_the_sandbox_roots() -> None:
    assert open_basedir(["/wordpress/wp-content/plugins/x", "/tmp/a", "/workspace/app", "/codebox-tools/wp-cli"]) \
        == "/wordpress:/tmp:/codebox:/workspace/app:/codebox-tools/wp-cli"


def test_salts_are_stable_per_sandbox_and_differ_between_sandboxes_and_homes(tmp_path: Path) -> None:
    key = salt_key(tmp_path / "native")
    assert salt_key(tmp_path / "native") == key  # made once
    assert (tmp_path / "native" / "salt-key").stat().st_mode & 0o777 == 0o600
    one, again, other = salts("sandbox-native-a", key), salts("sandbox-native-a", key), salts("sandbox-native-b", key)
    assert one == again and len(one) == 8
    assert not set(one.values()) & set(other.values())
    assert salts("sandbox-native-a", salt_key(tmp_path / "other-home")) != one


def test_bootstrap_defines_the_sandbox_world_and_quotes_what_it_embeds() -> None:
    text = bootstrap_php("sandbox-native-a", b"k", basedir="/wordpress:/tmp:/it's", block_external_http=True)
    for name in ("DB_DIR", "DB_FILE", "WP_CONTENT_DIR", "WP_PLUGIN_DIR", "WPMU_PLUGIN_DIR", "WP_TEMP_DIR", "UPLOADS",
                 "AUTH_KEY", "NONCE_SALT", "WP_HTTP_BLOCK_EXTERNAL"):
        assert f"define('{name}'" in text
    assert "ini_set('open_basedir', '/wordpress:/tmp:/it\\'s');" in text
    assert "WP_HTTP_BLOCK_EXTERNAL" not in bootstrap_php("sandbox-native-a", b"k", basedir="/", block_external_http=False)


def test_native_refuses_only_a_held_preview_before_anything_boots() -> None:
    """Browser commands and page observations run natively through the run's own preview relay; holding a
    preview (``codebox boot``, ``--hold``) stays Playground's."""
    from codebox_tui.lifecycle.request import CommandStep, RunRequest, check_request
    from codebox_tui.runtime.backends import check_features

    check_features("native", holds_preview=False)
    check_features("playground", holds_preview=True)
    with pytest.raises(BadInputError) as caught:
        check_features("native", holds_preview=True)
    assert caught.value.code == "native-no-preview" and "--backend playground" in caught.value.message
    check_request(RunRequest(commands=[CommandStep("wordpress.browser-probe", ["url=/"])], backend="native",
                             php=host_php().series))
    with pytest.raises(BadInputError) as caught:
        check_request(RunRequest(commands=[], backend="native", php=host_php().series, hold_s=60))
    assert caught.value.code == "native-no-preview"


def test_mounts_over_the_native_configuration_are_refused() -> None:
    from codebox_tui.runtime.backends import check_mount_targets

    check_mount_targets("native", ["/wordpress/wp-content/plugins/x", "/codebox-tools/wp-cli", "/codeboxes"])
    check_mount_targets("playground", ["/codebox/config"])
    for target in ("/codebox", "/codebox/config/", "/codebox/opcache/x", "/wordpress/wp-content/db.php"):
        with pytest.raises(BadInputError) as caught:
            check_mount_targets("native", ["/ok", target])
        assert caught.value.code == "invalid-mount" and caught.value.field == "mounts[1]"
