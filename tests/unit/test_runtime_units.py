"""Unit tests of the runtime's pure logic: mount parsing, policy checks, secret redaction,
WordPress build resolution, durations. (The real sandbox is covered in tests/e2e/test_runtime_*.py.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codebox_tui.contracts.common import new_id
from codebox_tui.contracts.runtime import RuntimePolicy
from codebox_tui.durations import parse_duration
from codebox_tui.errors import BadInputError, PolicyDeniedError
from codebox_tui.runtime.mounts import parse_mount, stage_readonly, validate_mounts
from codebox_tui.runtime.policy import SECRET_MARK, Redactor, check_command, load_policy, resolve_secrets
from codebox_tui.runtime.wordpress_builds import available_builds, resolve_build


def test_parse_mount_modes_and_normalisation(tmp_path: Path) -> None:
    ro = parse_mount(f"{tmp_path}:/wordpress/wp-content/plugins/x:readonly")
    assert (ro.source, ro.target, ro.mode) == (str(tmp_path.resolve()), "/wordpress/wp-content/plugins/x", "readonly")
    assert parse_mount(f"{tmp_path}:/srv/x").mode == "readwrite"
    assert parse_mount(f"{tmp_path}:/srv/x:ro").mode == "readonly"


@pytest.mark.parametrize(
    "target, code",
    [
        ("relative/path", "invalid-mount-target"),
        ("/wordpress/../etc", "invalid-mount-target"),
        ("/", "invalid-mount-target"),
    ],
)
def test_bad_mount_targets_are_rejected(tmp_path: Path, target: str, code: str) -> None:
    with pytest.raises(BadInputError) as info:
        parse_mount(f"{tmp_path}:{target}")
    assert info.value.code == code
    assert info.value.field == "mounts[0].target"


def test_missing_host_path_and_dotdot_source_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(BadInputError) as info:
        parse_mount(f"{tmp_path / 'nope'}:/srv/x")
    assert info.value.code == "missing-mount-source"
    with pytest.raises(BadInputError) as info:
        parse_mount(f"{tmp_path}/../{tmp_path.name}:/srv/x")
    assert info.value.code == "invalid-mount-source"


def test_malformed_mount_and_duplicate_targets(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="HOST_PATH:SANDBOX_PATH"):
        parse_mount("just-one-part")
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    with pytest.raises(BadInputError) as info:
        validate_mounts([parse_mount(f"{a}:/srv/x"), parse_mount(f"{b}:/srv/x")])
    assert info.value.code == "duplicate-mount-target"


def test_stage_readonly_copies_without_write_permission_or_symlinks(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "f.php").write_text("<?php\n")
    (src / "link").symlink_to("/etc/passwd")
    staged = stage_readonly(src, tmp_path / "staged")
    assert (staged / "sub" / "f.php").read_text() == "<?php\n"
    assert not (staged / "link").exists()
    assert not (staged / "sub" / "f.php").stat().st_mode & 0o222


def test_policy_allow_list_and_denial_details() -> None:
    policy = RuntimePolicy(commands=["wordpress.run-php"])
    check_command(policy, "wordpress.run-php")
    with pytest.raises(PolicyDeniedError) as info:
        check_command(policy, "inspect-mounted-inputs")
    assert info.value.code == "runtime-command-disallowed"
    assert info.value.details == {"allowedCommands": ["wordpress.run-php"]}


def test_load_policy_reports_the_bad_field(tmp_path: Path) -> None:
    assert load_policy('{"commands": ["wordpress.run-php"]}').commands == ["wordpress.run-php"]
    with pytest.raises(BadInputError, match="not valid JSON"):
        load_policy("{nope")
    with pytest.raises(BadInputError, match="does not exist"):
        load_policy(str(tmp_path / "missing.json"))
    with pytest.raises(BadInputError) as info:
        load_policy('{"commands": "wordpress.run-php"}')
    assert info.value.field.startswith("policy.commands")


def test_secrets_resolve_from_env_and_redact_raw_and_json_escaped_forms() -> None:
    policy = RuntimePolicy(commands=["wordpress.run-php"], secrets=["API_TOKEN", "ABSENT"])
    values = resolve_secrets(policy, {"API_TOKEN": 's3cr"et/value', "OTHER": "x"})
    assert values == {"API_TOKEN": 's3cr"et/value'}
    redact = Redactor(list(values.values()))
    assert redact('token=s3cr"et/value;') == f"token={SECRET_MARK};"
    assert redact('{"t": "s3cr\\"et/value"}') == '{"t": "' + SECRET_MARK + '"}'
    assert Redactor([]).active is False


def test_wordpress_builds_default_and_unknown_version_lists_available() -> None:
    builds = available_builds()
    assert {"6.2", "6.3", "6.4", "6.5"} <= set(builds)
    assert resolve_build(None).version == "6.5.5"
    assert resolve_build("6.4").key == "6.4"
    assert resolve_build("6.5.5").key == "6.5"
    with pytest.raises(BadInputError) as info:
        resolve_build("9.9")
    assert info.value.code == "unknown-wordpress-version"
    assert "6.5 (6.5.5)" in info.value.message


def test_the_default_wordpress_is_the_newest_shipped_build_and_run_help_lists_every_build() -> None:
    """Bumping @wp-playground/wordpress-builds without moving versions.DEFAULT_WP_VERSION fails here."""
    import subprocess
    import sys

    from codebox_tui.runtime.wordpress_builds import newest_stable
    from codebox_tui.versions import DEFAULT_WP_VERSION

    assert DEFAULT_WP_VERSION == newest_stable() == resolve_build("latest").key
    help_text = subprocess.run(
        [sys.executable, "-m", "codebox_tui", "run", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "300"},
        timeout=120,
    ).stdout
    for key, build in available_builds().items():
        assert (f"{key} ({build.version}" if key != build.version else key) in help_text, key
    assert f"{DEFAULT_WP_VERSION} ({resolve_build(None).version}, default)" in help_text


def test_durations_and_ids() -> None:
    assert parse_duration("15m", "--hold") == 900
    assert parse_duration("500ms", "--timeout") == 0.5
    assert parse_duration("90", "--hold") == 90
    with pytest.raises(BadInputError):
        parse_duration("soon", "--hold")
    runtime_id = new_id("runtime")
    prefix, stamp, suffix = runtime_id.split("-")
    assert prefix == "runtime" and len(suffix) == 6 and stamp.isalnum()


def test_runtime_env_names_are_validated_and_values_must_be_strings() -> None:
    from codebox_tui.contracts.runtime import RuntimePolicy as Policy
    from codebox_tui.runtime.backend import SandboxSpec

    spec = SandboxSpec(mounts=[], policy=Policy(commands=["wordpress.run-php"]), env={"APP_MODE": "review", "_X1": ""})
    assert spec.env == {"APP_MODE": "review", "_X1": ""}
    for bad in ("lower", "1ABC", "A-B", "", "A B"):
        with pytest.raises(BadInputError) as caught:
            SandboxSpec(mounts=[], policy=Policy(commands=["wordpress.run-php"]), env={bad: "v"})
        assert caught.value.field == f"env.{bad}"
        assert caught.value.code == "invalid-runtime-env"
    with pytest.raises(BadInputError) as caught:
        SandboxSpec(mounts=[], policy=Policy(commands=["wordpress.run-php"]), env={"N": 3})  # type: ignore[dict-item]
    assert caught.value.field == "env.N"


def test_spare_sandboxes_default_on_only_in_long_lived_processes() -> None:
    from codebox_tui.runtime.playground import spares_wanted

    # one-shot `codebox run`: a single boot, no TUI
    assert spares_wanted("auto", 1, interactive=False) is False
    # the TUI process, or any process booting its second sandbox
    assert spares_wanted("auto", 1, interactive=True) is True
    assert spares_wanted("auto", 2, interactive=False) is True
    # the setting and an explicit override win
    assert spares_wanted("off", 5, interactive=True) is False
    assert spares_wanted("on", 1, interactive=False) is True
    assert spares_wanted("on", 3, override=False) is False
    assert spares_wanted("off", 1, override=True) is True


def test_prepared_site_pool_take_is_exclusive_and_copies_the_seed(tmp_path: Path) -> None:
    from codebox_tui.runtime import golden as g
    from codebox_tui.runtime.wordpress_builds import WordPressBuild

    build = WordPressBuild("6.5", "6.5.5", tmp_path / "unused.zip", tmp_path / "unused")
    site = tmp_path / "site"
    (site / "wp-content" / "database").mkdir(parents=True)
    (site / "wp-load.php").write_text("<?php // core\n")
    (site / "wp-content" / "database" / ".ht.sqlite").write_bytes(b"db")
    root = tmp_path / "golden"
    root.mkdir()
    clean = tmp_path / "clean-opcache"
    (clean / "sysid").mkdir(parents=True)
    (clean / "sysid" / "wp-load.php.bin").write_bytes(b"opcodes")
    g.save_opcache_seed(clean, build, "8.3", root)
    seed = g.opcache_seed(build, "8.3", root)
    assert seed is not None and (seed / "sysid" / "wp-load.php.bin").read_bytes() == b"opcodes"
    assert g.opcache_seed(build, "8.2", root) is None  # one seed per PHP version

    g.prepare_site(build, "8.3", root, site)
    g.prepare_site(build, "8.3", root, site)
    g.prepare_site(build, "8.3", root, site)  # the pool is full: no third copy
    pool = root / "pool" / "wp-6.5.5-php8.3-v1"
    assert len(list(pool.glob("ready-*"))) == g.POOL_SIZE == 2
    first, second, third = tmp_path / "sb1", tmp_path / "sb2", tmp_path / "sb3"
    assert g.take_prepared_site(build, "8.3", root, first)
    assert g.take_prepared_site(build, "8.3", root, second)
    assert not g.take_prepared_site(build, "8.3", root, third) and not third.exists()
    for taken in (first, second):
        assert (taken / "wordpress" / "wp-content" / "database" / ".ht.sqlite").read_bytes() == b"db"
        assert (taken / "opcache" / "sysid" / "wp-load.php.bin").read_bytes() == b"opcodes"
    # each sandbox owns its copy: writing to one touches neither the golden site, the seed nor the other
    (first / "wordpress" / "wp-load.php").write_text("changed")
    (first / "opcache" / "sysid" / "wp-load.php.bin").write_bytes(b"poisoned")
    assert (site / "wp-load.php").read_text() == "<?php // core\n"
    assert (seed / "sysid" / "wp-load.php.bin").read_bytes() == b"opcodes"
    assert (second / "opcache" / "sysid" / "wp-load.php.bin").read_bytes() == b"opcodes"
    # abandoned partial copies are removed once stale
    stale = pool / ".tmp-abandoned"
    stale.mkdir()
    os.utime(stale, (0, 0))
    g.prepare_site(build, "8.3", root, site)
    assert not stale.exists()


def test_abandoned_sandbox_dirs_are_those_whose_owner_is_gone(tmp_path: Path) -> None:
    import subprocess
    import sys

    from codebox_tui.runtime.reaper import OWNER_FILE
    from codebox_tui.runtime.sandbox_dirs import abandoned_sandbox_dirs

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    for name, owner in (
        ("sandbox-dead", str(dead.pid)),
        ("sandbox-mine", str(os.getpid())),
        ("sandbox-live", str(os.getppid())),
        ("sandbox-garbled", "not-a-pid"),
    ):
        (tmp_path / name).mkdir()
        (tmp_path / name / OWNER_FILE).write_text(owner)
    (tmp_path / "sandbox-unowned").mkdir()  # killed before its owner file was written
    (tmp_path / "golden").mkdir()  # not a sandbox folder
    assert sorted(p.name for p in abandoned_sandbox_dirs(tmp_path)) == ["sandbox-dead"]
    assert sorted(p.name for p in abandoned_sandbox_dirs(tmp_path, unowned_age_s=-1)) == [
        "sandbox-dead",
        "sandbox-garbled",
        "sandbox-unowned",
    ]
    assert abandoned_sandbox_dirs(tmp_path / "missing") == []
