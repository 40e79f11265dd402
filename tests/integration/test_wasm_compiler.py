"""The ``wasm_compiler`` setting reaches the real Node sidecar (inside bubblewrap): ``baseline`` (the default)
starts node with ``--liftoff-only``, ``tiered`` with V8's own default. Every sandbox of the suite runs PHP
under the default; docs/performance.md ("WebAssembly compiler") has the measurements behind it."""

from __future__ import annotations

from pathlib import Path

import pytest

from codebox_tui.runtime.sidecar import Sidecar
from codebox_tui.settings import CodeboxSettings


def _node_argv(sidecar: Sidecar) -> list[str]:
    sidecar.request("ping", {}, 30.0)  # node is up: it accepted its options
    pid = sidecar.node_pid()
    assert pid is not None
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


@pytest.mark.parametrize(("setting", "flag_expected"), [("baseline", True), ("tiered", False)])
def test_the_sidecar_starts_node_with_the_chosen_wasm_compiler(
    tmp_path: Path, setting: str, flag_expected: bool
) -> None:
    sidecar = Sidecar(
        node="node",
        home=tmp_path / "home",
        network_policy="deny",
        sandboxes_root=tmp_path / "sandboxes",
        wasm_compiler=setting,
    )
    try:
        argv = _node_argv(sidecar)
    finally:
        sidecar.close()
    assert ("--liftoff-only" in argv) is flag_expected, argv
    assert argv.index("sidecar.mjs") > (argv.index("--liftoff-only") if flag_expected else 0)


def test_the_default_is_baseline_and_the_environment_chooses(monkeypatch: pytest.MonkeyPatch) -> None:
    assert CodeboxSettings().wasm_compiler == "baseline"
    monkeypatch.setenv("CODEBOX_WASM_COMPILER", "tiered")
    assert CodeboxSettings().wasm_compiler == "tiered"
