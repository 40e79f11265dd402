"""Interop: a bundle's package provenance has the reference's shape (docs/contracts.md, "Runtime provenance").

Found with scripts/reference_interop.py over native bundles: the reference verifier accepts them, but
``provenance.packages`` was Codebox's own ``{codebox, playground: {cli: "3.1.56", ...}}`` (bare version strings,
and the Playground CLI named on native runs, which never load it) where the contract has
``wp-codebox/package-provenance/v1``: each package ``{name, version}``, the versions that ran under
``environment``. These tests pin that shape with Codebox's own writer and the sidecar's pinned versions.
"""

from __future__ import annotations

import json

import pytest

from codebox_tui import __version__
from codebox_tui.bundle.capture_docs import package_provenance, provenance
from codebox_tui.contracts.runtime import RuntimeInfo
from codebox_tui.settings import NODE_BRIDGE_DIR

PINNED = json.loads((NODE_BRIDGE_DIR / "package.json").read_text())["dependencies"]


def _runtime(backend: str, php: str) -> RuntimeInfo:
    environment = {"kind": "wordpress", "name": backend, "wordpressVersion": "6.5.5", "phpVersion": php}
    return RuntimeInfo(id="runtime-x", backend=backend, environment=environment, createdAt="2026-11-27T00:00:00Z")


@pytest.mark.parametrize(
    ("backend", "php", "packages"),
    [
        ("wordpress-playground", "8.3.19", ["@wp-playground/cli", "@wp-playground/wordpress-builds"]),
        ("native", "8.2.36", ["@wp-playground/wordpress-builds"]),  # core from the builds, the host's PHP
    ],
)
def test_package_provenance_names_each_package_used_with_its_version(
    backend: str, php: str, packages: list[str]
) -> None:
    doc = package_provenance(_runtime(backend, php), __version__)
    assert doc["schema"] == "wp-codebox/package-provenance/v1"
    assert doc["wpCodebox"] == {"name": "codebox", "version": __version__}
    assert [entry["name"] for entry in doc["playground"].values()] == packages
    for entry in doc["playground"].values():
        assert entry == {"name": entry["name"], "version": PINNED[entry["name"]]}  # {name, version}, not a bare string
    assert doc["environment"] == {"wordpressVersion": "6.5.5", "phpVersion": php}  # the versions that ran


def test_runtime_provenance_keeps_the_backend_and_both_real_versions() -> None:
    doc = provenance(_runtime("native", "8.2.36"), [], __version__)
    assert doc["runtime"] == {"backend": "native", "wordpressVersion": "6.5.5", "phpVersion": "8.2.36"}
    assert doc["packages"] == package_provenance(_runtime("native", "8.2.36"), __version__)
