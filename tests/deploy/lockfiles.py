"""Reading pyproject.toml's ranges and the pins of the lock files."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
RUNTIME_LOCK = ROOT / "requirements.lock"
DEV_LOCK = ROOT / "requirements-dev.lock"
BUILD_LOCK = ROOT / "requirements-build.lock"

# `name==version` at the start of a line; hashes and `# via` comments follow on their own lines.
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==([^\s;\\]+)")


def project() -> dict:
    with (ROOT / "pyproject.toml").open("rb") as fh:
        return tomllib.load(fh)["project"]


def runtime_requirements() -> list[Requirement]:
    return [Requirement(line) for line in project()["dependencies"]]


def build_requirements() -> list[Requirement]:
    with (ROOT / "pyproject.toml").open("rb") as fh:
        return [Requirement(line) for line in tomllib.load(fh)["build-system"]["requires"]]


def dev_requirements() -> list[Requirement]:
    return [Requirement(line) for line in project()["optional-dependencies"]["dev"]]


def pins(path: Path) -> dict[str, Version]:
    """The locked version of each package of a lock file, by canonical name."""
    found: dict[str, Version] = {}
    for line in path.read_text().splitlines():
        match = _PIN.match(line)
        if match:
            found[canonicalize_name(match[1])] = Version(match[3])
    return found


def unhashed(path: Path) -> list[str]:
    """Pinned packages of a lock file that carry no --hash."""
    names, current, hashed = [], None, False
    for line in [*path.read_text().splitlines(), "end==0"]:
        match = _PIN.match(line)
        if match:
            if current is not None and not hashed:
                names.append(current)
            current, hashed = match[1], "--hash=" in line
        elif "--hash=sha256:" in line:
            hashed = True
    return names


def unlocked_closure(roots: list[Requirement], locked: dict[str, Version]) -> list[str]:
    """What the locked packages require (with the extras asked of them, for this
    interpreter and platform) but the lock leaves out or pins outside the range.

    Reads each package's requirements from its installed metadata, so it needs the
    environment scripts/test installs from the lock (see ``stale``).
    """
    problems: list[str] = []
    seen: set[tuple[str, str]] = set()
    todo = [(req, "") for req in roots]
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(req.name)
        version = locked.get(name)
        if version is None:
            problems.append(f"{req.name}: required ({req}) but not in the lock")
            continue
        if not req.specifier.contains(version, prereleases=True):
            problems.append(f"{req.name}: locked {version}, {req} is required")
        for wanted in ["", *sorted(req.extras)]:
            if (name, wanted) in seen:
                continue
            seen.add((name, wanted))
            requires = metadata.distribution(name).requires or []
            todo += [(Requirement(line), wanted) for line in requires]
    return sorted(set(problems))


def stale(locked: dict[str, Version]) -> list[str]:
    """Locked packages this environment lacks or holds at another version."""
    found = []
    for name, version in sorted(locked.items()):
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            found.append(f"{name}: not installed")
            continue
        if Version(installed) != version:
            found.append(f"{name}: installed {installed}, locked {version}")
    return found
