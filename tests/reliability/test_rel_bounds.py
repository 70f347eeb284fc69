"""Every non-learned ranker stays bounded at 20 000 candidates with default settings (the learned
ones have their own bounds in test_rel_learned.py): run in a child process whose address space
is capped, so a quadratic structure fails the test instead of the machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HELPER = Path(__file__).resolve().parents[1] / "helpers" / "helpers_bounds.py"
CAP_GB = 2.5  # measured peak RSS 1.4 GB (SemanticKNN's blocks, the capped entity graph)


def test_20000_candidates_rank_under_a_capped_address_space() -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, str(HELPER), str(CAP_GB)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["baseline", "gcs", "ppr", "qa-adjust"]
    assert all("n=20000 top=10" in line for line in lines)
