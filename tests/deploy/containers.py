"""Reading the Dockerfile (with dockerfile-parse) and compose.yaml as Docker would.

No container runtime runs where the tests do: these files are checked by what they say.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from dockerfile_parse import DockerfileParser

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
COMPOSE = ROOT / "compose.yaml"
DOCKERIGNORE = ROOT / ".dockerignore"


@dataclass(frozen=True)
class Instruction:
    name: str
    value: str
    stage: int  # 0 for the first FROM's stage


def instructions() -> list[Instruction]:
    parser = DockerfileParser(path=str(DOCKERFILE))
    found, stage = [], -1
    for item in parser.structure:
        name = item["instruction"]
        if name == "COMMENT":
            continue
        if name == "FROM":
            stage += 1
        found.append(Instruction(name, item["value"], stage))
    return found


def final_stage() -> list[Instruction]:
    every = instructions()
    return [i for i in every if i.stage == every[-1].stage]


def exec_form(value: str) -> list[str]:
    """The argument list of CMD/ENTRYPOINT/HEALTHCHECK CMD, exec (JSON) or shell form."""
    value = value.strip()
    if value.startswith("["):
        return list(json.loads(value))
    return ["/bin/sh", "-c", value]


def healthcheck_command(value: str) -> list[str]:
    """The command of a HEALTHCHECK instruction, after its --options."""
    _, sep, rest = value.partition("CMD")
    assert sep, f"HEALTHCHECK without CMD: {value}"
    return exec_form(rest)


_VARIABLE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[?-])(?P<arg>[^}]*))?\}")


class MissingVariable(Exception):
    pass


def interpolate(value: Any, environment: dict[str, str]) -> Any:
    """Compose's ${NAME}, ${NAME:-default} and ${NAME:?error} substitution, recursively."""
    if isinstance(value, dict):
        return {k: interpolate(v, environment) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, environment) for v in value]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match[str]) -> str:
        name, op, arg = match["name"], match["op"] or "", match["arg"] or ""
        present = environment.get(name)
        if op.endswith("?") and not present:
            raise MissingVariable(f"{name}: {arg}")
        if op.endswith("-") and not present:
            return arg
        return present or ""

    return _VARIABLE.sub(substitute, value)


def compose_raw() -> dict[str, Any]:
    """compose.yaml as YAML says it (anchors and merge keys resolved, no interpolation)."""
    return yaml.safe_load(COMPOSE.read_text())


def environment_of(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):  # the KEY=VALUE list form
        env = dict(item.split("=", 1) for item in env)
    return {k: str(v) for k, v in env.items()}
