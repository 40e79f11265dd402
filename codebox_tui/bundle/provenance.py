"""Runtime versions of a bundle, wherever its writer recorded them.

Codebox writes ``metadata.provenance.runtime`` (``wordpressVersion``, ``phpVersion``) and
``metadata.runtime.environment``. The reference implementation records the WordPress version in
``provenance.runtime`` / ``provenance.packages.environment`` and the PHP version only under
``context.phpWasmRuntimeAssetPreflight.phpVersion`` (its PHP-wasm asset preflight), sometimes also in
``provenance.packages.environment.phpVersion``. README "Artifact bundles" → interop.
"""

from __future__ import annotations

from typing import Any


def _get(doc: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(key)
    return doc


def _first_text(*values: Any) -> str | None:
    for value in values:
        if isinstance(value, str | int | float) and not isinstance(value, bool) and str(value).strip():
            return str(value).strip()
    return None


def runtime_versions(metadata: dict[str, Any]) -> dict[str, str | None]:
    """``{"backend", "wordpressVersion", "phpVersion"}`` from a bundle's ``metadata.json`` (None if unknown)."""
    prov_runtime = _get(metadata, "provenance", "runtime")
    environment = _get(metadata, "runtime", "environment")
    packages_env = _get(metadata, "provenance", "packages", "environment")
    return {
        "backend": _first_text(_get(prov_runtime, "backend"), _get(metadata, "runtime", "backend")),
        "wordpressVersion": _first_text(
            _get(prov_runtime, "wordpressVersion"), _get(environment, "wordpressVersion"),
            _get(packages_env, "wordpressVersion"), _get(environment, "version")),
        "phpVersion": _first_text(
            _get(prov_runtime, "phpVersion"), _get(environment, "phpVersion"), _get(packages_env, "phpVersion"),
            _get(metadata, "context", "phpWasmRuntimeAssetPreflight", "phpVersion")),
    }
