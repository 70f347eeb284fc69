"""The reliability suite (docs/reliability.md): every adversarial case, the fixed ones and
the ones that held.

Each test (each parametrised case) is one case; the count is printed at the end of any run that
collected some. It reuses the enrichment tests' fault server and the GAT tests' helpers.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from enrich_fault_server import fault_server  # the shared fixture

__all__ = ["fault_server"]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print how many reliability cases ran and how many held."""
    here = "tests/reliability/"
    counts: dict[str, int] = {}
    for outcome in ("passed", "failed", "error", "skipped", "xfailed"):
        reports = terminalreporter.stats.get(outcome, [])
        counts[outcome] = len(
            {r.nodeid for r in reports if getattr(r, "nodeid", "").startswith(here)}
        )
    total = sum(counts.values())
    if total:
        terminalreporter.write_line(
            f"reliability suite: {total} cases, {counts['passed']} ok, "
            f"{counts['failed'] + counts['error']} not ok, {counts['skipped']} skipped"
        )
