"""Reading pyproject.toml's ranges and the pins of the lock files."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
RUNTIME_LOCK = ROOT / "requirements.lock"
DEV_LOCK = ROOT / "requirements-dev.lock"

# `name==version` at the start of a line; hashes and `# via` comments follow on their own lines.
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==([^\s;\\]+)")


def project() -> dict:
    with (ROOT / "pyproject.toml").open("rb") as fh:
        return tomllib.load(fh)["project"]


def runtime_requirements() -> list[Requirement]:
    return [Requirement(line) for line in project()["dependencies"]]


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
