"""Leaves every layer may use: JSON-lines reading, cache paths, progress bars, torch threads."""
