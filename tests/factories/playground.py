"""The test session's warm Playground helper behind the ``playground_session`` fixture (tests/conftest.py)."""

from __future__ import annotations

import os
from pathlib import Path


class PlaygroundSession:
    """The test session's warm Playground: the shared Node sidecar is started and the golden
    WordPress site is built once (by booting and disposing one real sandbox), so later sandboxes
    in the same pytest session boot on the warm path.

    ``new_run(...)`` makes a fresh ``RunSession`` (its own sandbox, booted lazily by ``execute``);
    use it as a context manager so the sandbox is disposed::

        def test_x(playground_session, tmp_path):
            with playground_session.new_run(tmp_path, mounts=[...], commands=["wordpress.run-php"]) as run:
                result = run.execute("wordpress.run-php", ["code=echo 1;"])
    """

    def __init__(self, home: Path) -> None:
        self.home = home

    def private_home(self, tmp_path: Path) -> Path:
        """A CODEBOX_HOME of the test's own (its own store, inbox and default artifacts root) that shares this
        session's warm WordPress build: the golden site, Playground's own cache and the native backend's prepared
        install, linked. A test that runs the CLI with a bare new home instead builds the golden site again, cold
        (a minute or two of CI)."""
        home = tmp_path / "home"
        home.mkdir()
        for name in ("golden", "playground-home", "native"):
            (self.home / name).mkdir(exist_ok=True)
            (home / name).symlink_to(self.home / name, target_is_directory=True)
        return home

    def spec(
        self,
        *,
        mounts: list[str] | None = None,
        commands: list[str] | None = None,
        network: str = "deny",
        secrets: list[str] | None = None,
        **spec_fields: object,
    ):  # type: ignore[no-untyped-def]
        from codebox_tui.contracts.runtime import RuntimePolicy
        from codebox_tui.runtime.backend import SandboxSpec
        from codebox_tui.runtime.mounts import parse_mount, validate_mounts
        from codebox_tui.runtime.policy import resolve_secrets

        policy = RuntimePolicy(
            commands=commands or ["inspect-mounted-inputs", "wordpress.run-php", "wordpress.ability"],
            network=network,
            secrets=secrets or [],
        )
        parsed = validate_mounts([parse_mount(text, index) for index, text in enumerate(mounts or [])])
        return SandboxSpec(mounts=parsed, policy=policy, secret_env=resolve_secrets(policy), **spec_fields)  # type: ignore[arg-type]

    def new_run(self, artifacts_root: Path, **spec_kwargs: object):  # type: ignore[no-untyped-def]
        from codebox_tui.runtime.session import RunSession

        return RunSession(self.spec(**spec_kwargs), artifacts_root)  # type: ignore[arg-type]


def node_pid(sidecar) -> int:  # type: ignore[no-untyped-def]
    """The host pid of the sidecar's Node process (a descendant of bwrap when confined)."""
    stack = [sidecar.pid]
    while stack:
        pid = stack.pop()
        try:
            if os.path.basename(os.readlink(f"/proc/{pid}/exe")) == "node":
                return pid
            stack.extend(int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split())
        except OSError:
            continue
    raise AssertionError("no node process under the sidecar")
