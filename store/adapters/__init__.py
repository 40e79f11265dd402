"""Built-in apply adapters (registered as ``codebox.apply_adapters`` entry points in pyproject)."""
