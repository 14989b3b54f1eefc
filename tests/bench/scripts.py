"""Running a bench/ script for a smoke: each smoke checks what the script prints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def run_bench(script: str, *args: str, timeout: float) -> str:
    """What ``bench/SCRIPT ARGS`` prints, the run having ended well (else the test fails
    with its output and the end of its errors)."""
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return done.stdout
