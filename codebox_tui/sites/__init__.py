"""Contained-site handles: prepared sites kept as snapshots under ``$CODEBOX_HOME/sites`` (docs/sites.md)."""
