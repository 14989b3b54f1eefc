"""`cloudadmin --version` prints the package's version and does nothing else."""

from __future__ import annotations

import os
import subprocess
import sys

from cloudadmin import __version__


class TestVersion:
    def test_prints_the_version(self, tmp_path):  # type: ignore[no-untyped-def]
        # No database is configured or touched: the data directory stays empty.
        env = {**os.environ, "CLOUDADMIN_DATA_DIR": str(tmp_path / "data")}
        done = subprocess.run(
            [sys.executable, "-m", "cloudadmin", "--version"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == f"cloudadmin {__version__}\n"
        assert not (tmp_path / "data").exists()

    def test_is_listed_in_the_help(self):
        done = subprocess.run(
            [sys.executable, "-m", "cloudadmin", "--help"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "--version" in done.stdout
