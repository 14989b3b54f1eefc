"""Scheduling the suite over pytest-xdist workers (scripts/test runs one per core, plus one).

The tests that measure time (marked timing) and those that load the whole machine (marked
heavy: a fuzzer, a load generator) form one lane: one worker runs them one after the
other from the start of the run, so that no latency bound or deadline of theirs depends
on another of them running beside it, and no worker waits idle for another's turn. Then
the tests that start processes (marked slow, the longest) go out a module at a time (a
module's fixture may start a deployment or Chromium once for all its tests), the largest
first, so that none is left alone at the end of the run; then each other test is a unit
of its own, in collection order (each worker runs its SQLite tests, then its PostgreSQL
ones). When the lane is done, its worker takes these too.

`--dist loadgroup` would form the lane from an xdist_group mark, but pytest 9.2 drops the
group xdist 3.8 writes into the node id (pytest-xdist issue 1386), and the controller does
not collect: the workers write the lane's and the slow tests' ids to a file it reads.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

LANE = "lane"
SLOW = "slow"
# The file the workers list the lane's and the slow tests in; named by the controller
# before it starts the workers, which inherit its environment.
IDS_FILE = "CLOUDADMIN_TEST_SCHEDULE"


def in_lane(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(name) for name in ("timing", "heavy"))


def slow(item: pytest.Item) -> bool:
    return item.get_closest_marker("slow") is not None


@pytest.fixture(autouse=True)
def _one_lane_test_at_a_time(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    # The lane runs in one worker; under another --dist its tests still take turns,
    # through a lock shared by the workers.
    if not in_lane(request.node) or "PYTEST_XDIST_WORKER" not in os.environ:
        yield
        return
    # Each worker's base temporary directory is a child of the run's.
    lock = tmp_path_factory.getbasetemp().parent / "lane-tests.lock"
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _distributing(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput") and config.getoption("dist", "no") != "no"


def pytest_configure(config: pytest.Config) -> None:
    if not _distributing(config):
        return
    handle, path = tempfile.mkstemp(prefix="cloudadmin-test-schedule-", suffix=".txt")
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
    lines = [
        f"{LANE if in_lane(item) else SLOW} {item.nodeid}\n"
        for item in items
        if in_lane(item) or slow(item)
    ]
    mine = Path(f"{target}.{config.workerinput['workerid']}")
    mine.write_text("".join(lines))
    mine.replace(target)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    # The default distribution (plain `-n N`, or --dist load/loadgroup); another --dist
    # asked for explicitly is left to xdist.
    if config.getoption("dist") not in ("load", "loadgroup") or not os.environ.get(IDS_FILE):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Lane(LoadScopeScheduling):
        """LoadScopeScheduling with a unit of work per test, except the lane (one unit,
        handed out first) and the slow tests (a unit per module, handed out next)."""

        _kinds: dict[str, str] | None = None

        def _kind(self, nodeid: str) -> str | None:
            if self._kinds is None:
                # Read once the collections are in: the workers wrote it while collecting.
                pairs = Path(os.environ[IDS_FILE]).read_text().splitlines()
                self._kinds = {
                    nodeid: kind for kind, _, nodeid in (line.partition(" ") for line in pairs)
                }
            return self._kinds.get(nodeid)

        def _split_scope(self, nodeid: str) -> str:
            kind = self._kind(nodeid)
            if kind == SLOW:  # a module's processes (a deployment, Chromium) start once
                return nodeid.split("::", 1)[0]
            return LANE if kind == LANE else nodeid

        def schedule(self) -> None:
            # LoadScopeScheduling.schedule, with the units in the order above.
            assert self.collection_is_completed
            if self.collection is not None:
                for node in self.nodes:
                    self._reschedule(node)
                return
            if not self._check_nodes_have_same_collection():
                self.log("**Different tests collected, aborting run**")
                return
            self.collection = list(next(iter(self.registered_collections.values())))
            units: dict[str, dict[str, bool]] = {}
            for nodeid in self.collection:
                units.setdefault(self._split_scope(nodeid), {})[nodeid] = False
            rank = {LANE: 0, SLOW: 1, None: 2}

            def order(scope: str) -> tuple[int, int]:
                # The lane, then the slow modules, most tests first, then the rest.
                first = next(iter(units[scope]))
                return rank[self._kind(first)], -len(units[scope])

            for scope in sorted(units, key=order):
                self.workqueue[scope] = units[scope]
            for _ in range(len(self.nodes) - len(self.workqueue)):  # more workers than work
                unused, _ = self.assigned_work.popitem()
                unused.shutdown()
            for node in self.nodes:
                if self.workqueue:
                    self._assign_work_unit(node)
            for node in self.nodes:
                self._reschedule(node)

    return Lane(config, log)  # type: ignore[arg-type]
