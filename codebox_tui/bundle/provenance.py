"""Runtime versions of a bundle, wherever its writer recorded them.

Codebox writes ``metadata.provenance.runtime`` (``wordpressVersion``, ``phpVersion``) and
``metadata.runtime.environment``. The reference implementation records the WordPress version in
``provenance.runtime`` / ``provenance.packages.environment`` and the PHP version only under
``context.phpWasmRuntimeAssetPreflight.phpVersion`` (its PHP-wasm asset preflight), sometimes also in
``provenance.packages.environment.phpVersion``. README "Artifact bundles" → interop.
"""

from __future__ import annotations

from codebox_tui.contracts.bundle_read import MetadataView


def _first_text(*values: str | None) -> str | None:
    for value in values:
        if value is not None and value.strip():
            return value.strip()
    return None


def runtime_versions(metadata: MetadataView) -> dict[str, str | None]:
    """``{"backend", "wordpressVersion", "phpVersion"}`` from a bundle's ``metadata.json`` (None if unknown)."""
    prov_runtime = metadata.provenance.runtime
    environment = metadata.runtime.environment
    packages_env = metadata.provenance.packages.environment
    return {
        "backend": _first_text(prov_runtime.backend, metadata.runtime.backend),
        "wordpressVersion": _first_text(
            prov_runtime.wordpressVersion,
            environment.wordpressVersion,
            packages_env.wordpressVersion,
            environment.version,
        ),
        "phpVersion": _first_text(
            prov_runtime.phpVersion,
            environment.phpVersion,
            packages_env.phpVersion,
            metadata.context.phpWasmRuntimeAssetPreflight.phpVersion,
        ),
    }
