"""Leaves every layer may use: JSON-lines reading, cache paths, progress bars, torch threads,
the declared field schemas (what a file or payload may set)."""
