"""What is wrong with a document: JSON pointers and messages."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from pydantic import ValidationError

from cloudadmin.importer.records import NestedError

# A million bad records would otherwise make a million lines nobody reads.
MAX_PROBLEMS = 100


@dataclass(frozen=True, slots=True)
class Problem:
    pointer: str
    message: str

    def __str__(self) -> str:
        # The empty pointer is the whole document (not valid JSON, not an object).
        return f"{self.pointer}: {self.message}" if self.pointer else self.message


class LoadError(Exception):
    """The document cannot be loaded; nothing was written."""

    def __init__(self, problems: Iterable[Problem], omitted: int = 0) -> None:
        self.problems = list(problems)
        self.omitted = omitted
        super().__init__("\n".join(self.lines()))

    def lines(self) -> list[str]:
        lines = [str(p) for p in self.problems]
        if self.omitted:
            lines.append(f"... and {self.omitted} more problems")
        return lines


class Problems:
    """Collects problems up to MAX_PROBLEMS and counts the rest."""

    def __init__(self) -> None:
        self.items: list[Problem] = []
        self.omitted = 0

    def add(self, pointer: str, message: str) -> None:
        if len(self.items) < MAX_PROBLEMS:
            self.items.append(Problem(pointer, message))
        else:
            self.omitted += 1

    def __bool__(self) -> bool:
        return bool(self.items)

    def __len__(self) -> int:
        return len(self.items) + self.omitted

    def raise_if_any(self) -> None:
        if self.items:
            raise LoadError(self.items, self.omitted)


def escape(token: str | int) -> str:
    """One JSON pointer reference token (RFC 6901)."""
    return str(token).replace("~", "~0").replace("/", "~1")


def pointer(*tokens: str | int) -> str:
    return "".join(f"/{escape(t)}" for t in tokens)


_MESSAGES = {
    "missing": "required",
    "extra_forbidden": "unknown key",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "dict_type": "must be an object",
    "list_type": "must be an array",
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "bool_type": "must be true or false",
}


def from_validation_error(prefix: tuple[str | int, ...], exc: ValidationError) -> Iterator[Problem]:
    """pydantic's errors as problems at pointers below ``prefix``."""
    for err in exc.errors(include_url=False):
        loc = list(err["loc"])
        message = _MESSAGES.get(err["type"], err["msg"])
        original = (err.get("ctx") or {}).get("error")
        if isinstance(original, NestedError):  # a model-level check that names its field
            loc.append(original.field)
            message = original.message
        elif err["type"] == "literal_error":
            message = "must be one of " + err["ctx"]["expected"]
        yield Problem(pointer(*prefix, *_clean(loc)), message)


def _clean(loc: list[str | int]) -> Iterator[str | int]:
    for token in loc:
        # Union members show up as loc entries ("int", "str", "GroupObject"); they
        # are not part of the document's structure.
        if isinstance(token, str) and (token in _UNION_TAGS or token.startswith("function-")):
            continue
        # A dict key that failed validation is followed by a "[key]" marker.
        if token == "[key]":
            continue
        yield token


_UNION_TAGS = {"int", "str", "GroupObject", "constrained-int", "constrained-str"}
