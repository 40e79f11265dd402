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
    assert (
        open_basedir(["/wordpress/wp-content/plugins/x", "/tmp/a", "/workspace/app", "/codebox-tools/wp-cli"])
        == "/wordpress:/tmp:/codebox:/workspace/app:/codebox-tools/wp-cli"
    )


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
    for name in (
        "DB_DIR",
        "DB_FILE",
        "WP_CONTENT_DIR",
        "WP_PLUGIN_DIR",
        "WPMU_PLUGIN_DIR",
        "WP_TEMP_DIR",
        "UPLOADS",
        "AUTH_KEY",
        "NONCE_SALT",
        "WP_HTTP_BLOCK_EXTERNAL",
    ):
        assert f"define('{name}'" in text
    assert "ini_set('open_basedir', '/wordpress:/tmp:/it\\'s');" in text
    assert "WP_HTTP_BLOCK_EXTERNAL" not in bootstrap_php(
        "sandbox-native-a", b"k", basedir="/", block_external_http=False
    )


def test_native_holds_a_preview_but_only_on_loopback() -> None:
    """Holding a preview (``codebox boot``, ``--hold``) works on native too; its relay listens on 127.0.0.1
    only, so another ``--preview-bind`` is refused before anything boots, naming the way out."""
    from codebox_tui.lifecycle.request import RunRequest, check_request
    from codebox_tui.runtime.backends import check_features

    check_features("native")
    check_features("native", preview_bind="127.0.0.1")
    check_features("playground", preview_bind="0.0.0.0")
    with pytest.raises(BadInputError) as caught:
        check_features("native", preview_bind="0.0.0.0")
    assert caught.value.code == "native-preview-bind" and "--backend playground" in caught.value.message
    check_request(RunRequest(commands=[], backend="native", php=host_php().series, hold_s=60, preview_port=9999))
    with pytest.raises(BadInputError) as caught:
        check_request(
            RunRequest(commands=[], backend="native", php=host_php().series, hold_s=60, preview_bind="0.0.0.0")
        )
    assert caught.value.field == "preview-bind"


def test_mounts_over_the_native_configuration_are_refused() -> None:
    from codebox_tui.runtime.backends import check_mount_targets

    check_mount_targets("native", ["/wordpress/wp-content/plugins/x", "/codebox-tools/wp-cli", "/codeboxes"])
    check_mount_targets("playground", ["/codebox/config"])
    for target in ("/codebox", "/codebox/config/", "/codebox/opcache/x", "/wordpress/wp-content/db.php"):
        with pytest.raises(BadInputError) as caught:
            check_mount_targets("native", ["/ok", target])
        assert caught.value.code == "invalid-mount" and caught.value.field == "mounts[1]"


def test_a_fixed_preview_port_is_used_or_refused_saying_why() -> None:
    """``--preview-port`` on native: the relay listens on that port of 127.0.0.1, and a port already taken fails
    the boot with ``preview-port-unavailable`` naming it."""
    import socket

    from codebox_tui.errors import SandboxError
    from codebox_tui.runtime.native_preview import PreviewRelay

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(SandboxError) as caught:
            PreviewRelay(5.0, port)
        assert caught.value.code == "preview-port-unavailable" and str(port) in caught.value.message
    relay = PreviewRelay(5.0, port)  # free again
    try:
        assert relay.port == port and relay.url == f"http://127.0.0.1:{port}"
    finally:
        relay.close()
