"""Running a `cloudadmin` command in a pseudo-terminal, as an operator's shell would."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time


def run_in_terminal(*args: str, env: dict[str, str], timeout: float = 120) -> tuple[int, str]:
    """Exit code and everything the command wrote to its terminal (stdout and stderr)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cloudadmin", *args],
        # A terminal that rich draws on; the width keeps lines on one row.
        env={**env, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"},
        stdin=slave,
        stdout=slave,
        stderr=slave,
        close_fds=True,
    )
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            if time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(f"{args} did not finish within {timeout} s")
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
    code = proc.wait(timeout=timeout)
    return code, b"".join(chunks).decode("utf-8", "replace")
