"""`cloudadmin serve` and its worker processes share their metrics through files.

prometheus_client decides when it is first imported whether values live in process
memory or in files of PROMETHEUS_MULTIPROC_DIR, so `serve` sets that variable before
anything imports it, and uvicorn's worker processes inherit it. Nothing here imports
prometheus_client.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from functools import partial
from pathlib import Path

from cloudadmin.config import Settings, get_settings

ENV = "PROMETHEUS_MULTIPROC_DIR"


def share_metrics(settings: Settings) -> Settings:
    """Gives this `serve` a metrics directory with no values of an earlier run in it, and
    returns the settings that name it (the app reads the directory from them).

    A configured directory is emptied of its value files (a counter starts at zero with
    the service, not at the figures of processes that are gone); otherwise a fresh
    temporary directory is made, and removed when `serve` exits."""
    if not settings.metrics_enabled:
        return settings
    configured = settings.prometheus_multiproc_dir
    if configured is not None:
        configured.mkdir(parents=True, exist_ok=True)
        for stale in configured.glob("*.db"):
            stale.unlink(missing_ok=True)
        path = configured
    else:
        path = Path(tempfile.mkdtemp(prefix="cloudadmin-metrics-"))
        atexit.register(partial(shutil.rmtree, path, ignore_errors=True))
    os.environ[ENV] = str(path)
    get_settings.cache_clear()
    return get_settings()
