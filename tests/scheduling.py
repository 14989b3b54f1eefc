"""Scheduling the suite over pytest-xdist workers (scripts/test runs `-n 2`).

The heavy tests (marked slow or timing: they start servers and workers, or measure time)
form one lane: one worker runs them one after the other from the start of the run, while
the other workers take the ordinary tests one at a time; when the lane is done, its worker
takes ordinary tests too. Two heavy tests side by side on a small machine would make each
other's deadlines and latency bounds a matter of luck; a heavy test waiting for another's
lock would leave its worker idle. `--dist loadgroup` would do this with an xdist_group
mark, but pytest 9.2 drops the group xdist 3.8 writes into the node id (pytest-xdist issue
1386), so this scheduler reads the heavy tests' ids from a file the workers write after
collecting (the controller does not collect).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

HEAVY = "heavy"
# The file the workers name the heavy tests in; set by the controller, inherited by the
# workers it starts.
IDS_FILE = "CLOUDADMIN_TEST_HEAVY_IDS"


def heavy(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(name) for name in ("slow", "timing"))


def _distributing(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput") and config.getoption("dist", "no") != "no"


def pytest_configure(config: pytest.Config) -> None:
    if not _distributing(config):
        return
    handle, path = tempfile.mkstemp(prefix="cloudadmin-heavy-tests-", suffix=".txt")
    os.close(handle)
    os.environ[IDS_FILE] = path

    def forget() -> None:
        os.environ.pop(IDS_FILE, None)
        Path(path).unlink(missing_ok=True)

    config.add_cleanup(forget)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    target = os.environ.get(IDS_FILE)
    if not hasattr(config, "workerinput") or not target:
        return
    # Every worker collects the same tests; each writes the whole list and renames it into
    # place, so the controller never reads half a file.
    mine = Path(f"{target}.{config.workerinput['workerid']}")
    mine.write_text("".join(f"{item.nodeid}\n" for item in items if heavy(item)))
    mine.replace(target)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    # The default distribution (plain `-n N`, or --dist load/loadgroup); another --dist
    # asked for explicitly is left to xdist.
    if config.getoption("dist") not in ("load", "loadgroup") or not os.environ.get(IDS_FILE):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class HeavyLane(LoadScopeScheduling):
        """Each ordinary test is its own unit of work; the heavy tests are one unit, the
        largest, which LoadScopeScheduling hands out first (--loadscope-reorder, on by
        default, sorts the units by size)."""

        _heavy: frozenset[str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._heavy is None:
                # Read once the collections are in: the workers wrote it while collecting.
                self._heavy = frozenset(Path(os.environ[IDS_FILE]).read_text().splitlines())
            return HEAVY if nodeid in self._heavy else nodeid

    return HeavyLane(config, log)  # type: ignore[arg-type]
