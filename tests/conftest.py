"""Shared fixtures. Tests run against a private CODEBOX_HOME so they never touch the user's store,
and every sandbox is a real WordPress Playground booted by the real Node sidecar."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
_HOME = Path(tempfile.mkdtemp(prefix="codebox-test-home-"))
os.environ["CODEBOX_HOME"] = str(_HOME)
# The test process boots many sandboxes; background spares would only add load. test_runtime_spare
# turns them on explicitly.
os.environ["CODEBOX_SPARE_SANDBOXES"] = "off"

from codebox_tui.settings import reload_settings  # noqa: E402
from tests.factories.paths import EXAMPLE_PLUGIN  # noqa: E402
from tests.factories.playground import PlaygroundSession  # noqa: E402

reload_settings()


_INTEGRATION_DIRS = (Path(__file__).resolve().parent / "e2e", Path(__file__).resolve().parent / "integration")


# The slowest files (each a minute or more of real sandboxes), started first: with `--dist loadfile` a worker
# takes whole files in collection order, so long files at the end would leave the other worker idle while
# they finish (longest job first; docs/performance.md, "Test suite").
_SLOWEST_FIRST = (
    "e2e/test_wp_unittestcase.py",
    "e2e/test_runtime_playground.py",
    "e2e/test_run_parity.py",
    "e2e/test_batch.py",
    "e2e/test_exec.py",
    "e2e/test_backend_parity.py",
    "security/test_trusted_probes.py",
    "e2e/test_recipes_examples.py",
    "e2e/test_runtime_cli.py",
    "security/test_sandbox_writes.py",
    "e2e/test_runtime_spare.py",
    "security/test_site_state_attribution.py",
    "e2e/test_tui_evaluate_flow.py",
    "e2e/test_agent_task.py",
    "e2e/test_native_flows.py",
    "e2e/test_preview_holds.py",
    "e2e/test_exec_output_only.py",
    "e2e/test_evaluate_patch_mu_plugin.py",
    "e2e/test_episodes.py",
    "security/test_exec_git_links.py",
)
_TESTS = Path(__file__).resolve().parent


def _run_order(item: pytest.Item) -> tuple[int, int]:
    rel = item.path.relative_to(_TESTS).as_posix() if item.path.is_relative_to(_TESTS) else ""
    if rel in _SLOWEST_FIRST:
        return 0, _SLOWEST_FIRST.index(rel)
    if rel.startswith(("e2e/", "integration/", "security/")):
        return 1, 0
    return 2, 0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Everything under tests/e2e and tests/integration is marked ``integration``, so
    ``pytest -m "not integration and not playground"`` is the quick run. Files with real sandboxes run
    first, the slowest of them before the rest (a stable sort: each file keeps its own order)."""
    for item in items:
        if any(item.path.is_relative_to(folder) for folder in _INTEGRATION_DIRS):
            item.add_marker(pytest.mark.integration)
    items.sort(key=_run_order)


@pytest.fixture(scope="session")
def codebox_home() -> Iterator[Path]:
    yield _HOME


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    try:
        from codebox_tui.runtime.playground import shutdown_sidecars

        shutdown_sidecars()
    finally:
        shutil.rmtree(_HOME, ignore_errors=True)


@pytest.fixture
def plugin_copy(tmp_path: Path) -> Path:
    """A private copy of the example plugin (safe to mount read-write)."""
    dest = tmp_path / "simple-plugin"
    shutil.copytree(EXAMPLE_PLUGIN, dest)
    return dest


# -- shared Playground fixtures (reuse these in any test that needs a real sandbox) ------------------


@pytest.fixture(scope="session")
def playground_session(tmp_path_factory: pytest.TempPathFactory) -> PlaygroundSession:
    """Warm Playground shared by the whole test session (one cold boot, then warm sandboxes)."""
    helper = PlaygroundSession(_HOME)
    with helper.new_run(tmp_path_factory.mktemp("playground-warmup")) as run:
        run.boot_sandbox()
    return helper


@pytest.fixture
def make_run_session(playground_session: PlaygroundSession, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Factory for fresh RunSessions on the warm Playground; every one is closed after the test."""
    made: list[object] = []

    def factory(**spec_kwargs: object):  # type: ignore[no-untyped-def]
        run = playground_session.new_run(tmp_path / f"artifacts-{len(made)}", **spec_kwargs)
        made.append(run)
        return run

    yield factory
    for run in made:
        run.close()  # type: ignore[attr-defined]
