"""The lock files pin what pyproject.toml allows, and each install is reproducible."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.deploy.lockfiles import (
    BUILD_LOCK,
    DEV_LOCK,
    RUNTIME_LOCK,
    build_requirements,
    dev_requirements,
    pins,
    runtime_requirements,
    stale,
    unhashed,
    unlocked_closure,
)

# Never wanted in the image or the test venv: gigabytes, and nothing of ours imports them.
FORBIDDEN = ("torch", "nvidia-", "triton")


def installed_from(lock: Path) -> dict[str, Version]:
    """The lock's pins, when this environment was installed from it (scripts/test does);
    otherwise the closure cannot be read from the installed metadata: skipped, except
    under CI=true."""
    locked = pins(lock)
    differ = stale(locked)
    if differ:
        reason = f"this environment was not installed from {lock.name}: {differ[:3]}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return locked


def unsatisfied(requirements: list[Requirement], locked: dict[str, Version]) -> list[str]:
    problems = []
    for req in requirements:
        version = locked.get(canonicalize_name(req.name))
        if version is None:
            problems.append(f"{req.name}: not in the lock")
        elif not req.specifier.contains(version, prereleases=True):
            problems.append(f"{req.name}: locked {version}, pyproject wants {req.specifier}")
    return problems


class TestRuntimeLock:
    def test_pins_every_dependency_within_its_range(self):
        assert unsatisfied(runtime_requirements(), pins(RUNTIME_LOCK)) == []

    def test_holds_everything_they_require_in_turn(self):
        assert unlocked_closure(runtime_requirements(), installed_from(RUNTIME_LOCK)) == []

    def test_leaves_out_the_development_tools(self):
        locked = pins(RUNTIME_LOCK)
        tools = [r.name for r in dev_requirements() if canonicalize_name(r.name) in locked]
        # pyyaml or packaging may come in through a runtime dependency; the test tools never.
        assert not {"pytest", "mypy", "ruff", "hypothesis", "schemathesis"} & set(tools)

    def test_names_the_versions_of_the_dev_lock(self):
        runtime, dev = pins(RUNTIME_LOCK), pins(DEV_LOCK)
        differ = {
            name: (str(v), str(dev.get(name))) for name, v in runtime.items() if dev.get(name) != v
        }
        assert differ == {}, "requirements.lock and requirements-dev.lock disagree"


class TestDevLock:
    def test_pins_every_dependency_and_tool_within_its_range(self):
        wanted = runtime_requirements() + dev_requirements()
        assert unsatisfied(wanted, pins(DEV_LOCK)) == []

    def test_holds_everything_they_require_in_turn(self):
        # Extras included (pydantic[email], uvicorn[standard], ...), as installed here
        # from this lock by scripts/test.
        wanted = runtime_requirements() + dev_requirements()
        assert unlocked_closure(wanted, installed_from(DEV_LOCK)) == []


class TestBuildLock:
    def test_pins_what_builds_the_wheel_within_its_range(self):
        assert unsatisfied(build_requirements(), pins(BUILD_LOCK)) == []


@pytest.mark.parametrize("lock", [RUNTIME_LOCK, DEV_LOCK, BUILD_LOCK], ids=lambda p: p.name)
class TestEveryLock:
    def test_every_pin_carries_hashes(self, lock):
        assert unhashed(lock) == []

    def test_pull_in_no_gpu_stack(self, lock):
        assert [n for n in pins(lock) if n.startswith(FORBIDDEN)] == []

    def test_are_written_by_scripts_lock(self, lock):
        # Hand edits drift from pyproject.toml; the header says how the file was made.
        assert "scripts/lock" in lock.read_text().splitlines()[1]
