"""A portal form: what was typed (kept for the redisplay), and the field messages of a
refusal, from the same schema and the same service checks as the API's.

A page reads its form with :func:`read_form`, builds the API's own schema with
:func:`parse` (its pydantic messages become field messages) and calls the service; a
typed error the service raises becomes field messages with :func:`errors_of`. A refused
form is shown again with what was typed and each field's message, and nothing is
written (the route rolls the request back: status 400).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError
from starlette.datastructures import UploadFile
from starlette.requests import Request

from cloudadmin.errors import ApiError

M = TypeVar("M", bound=BaseModel)

# The whole form's message (not a field's).
FORM = "__form__"
# What a text field may hold at most; the body limit bounds the whole form.
MAX_FIELD_CHARS = 10_000
UNSTORABLE = "Contains a character that cannot be stored."
TOO_LONG = f"At most {MAX_FIELD_CHARS} characters."


@dataclass
class Form:
    """What was typed, by field (a field given more than once: its values in ``lists``),
    the uploads, and the messages of a refusal, by field."""

    values: dict[str, str] = field(default_factory=dict)
    lists: dict[str, list[str]] = field(default_factory=dict)
    files: dict[str, UploadFile] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def get(self, name: str, default: str = "") -> str:
        return self.values.get(name, default)

    def checked(self, name: str) -> bool:
        """A checkbox: sent (any value but "false") means on."""
        return name in self.values and self.values[name] not in ("", "false", "off")

    def text_or_none(self, name: str) -> str | None:
        value = self.values.get(name, "").strip()
        return value or None

    @property
    def ok(self) -> bool:
        return not self.errors

    def refuse(self, errors: Mapping[str, str]) -> Form:
        self.errors.update(errors)
        return self


# NUL and the surrogates (a lone one decoded from a broken body): one regular expression
# scan, which is C, rather than a Python step a character (a 100,000-character field cost
# some milliseconds that way).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def text_problem(value: str) -> str | None:
    """The message for a text no column can store, or longer than MAX_FIELD_CHARS."""
    if _UNSTORABLE.search(value) is not None:
        return UNSTORABLE
    if len(value) > MAX_FIELD_CHARS:
        return TOO_LONG
    return None


async def read_form(request: Request) -> Form:
    """The request's form (the CSRF token left out); a text no column can store (NUL, a
    lone surrogate) or longer than MAX_FIELD_CHARS is a field message already."""
    data = await request.form()
    form = Form()
    for name, value in data.multi_items():
        if name == "csrf_token":
            continue
        if isinstance(value, UploadFile):
            if value.filename:
                form.files[name] = value
            continue
        problem = text_problem(value)
        if problem is not None:
            form.errors.setdefault(name, problem)
            value = ""
        form.lists.setdefault(name, []).append(value)
        form.values.setdefault(name, value)
    return form


def query_form(request: Request, *, max_chars: int = MAX_FIELD_CHARS) -> Form:
    """A page's query string as a form (a list's filters): what was typed, each value cut
    at ``max_chars``; a text no column can store is a field message already, as in
    :func:`read_form`, and never reaches a statement."""
    form = Form()
    for name, value in request.query_params.multi_items():
        problem = text_problem(name) or text_problem(value[:max_chars])
        if problem is not None:
            form.errors.setdefault(name if not text_problem(name) else FORM, problem)
            continue
        form.lists.setdefault(name, []).append(value[:max_chars])
        form.values.setdefault(name, value[:max_chars])
    return form


def _field_of(loc: Iterable[Any]) -> str:
    parts = [str(part) for part in loc if not isinstance(part, int)]
    return parts[0] if parts else FORM


def parse(model: type[M], values: Mapping[str, Any], form: Form) -> M | None:
    """``model`` validated from ``values``; None, with the form's field messages set,
    when it does not validate."""
    if form.errors:
        return None
    try:
        return model.model_validate(dict(values))
    except PydanticValidationError as invalid:
        for error in invalid.errors():
            message = str(error.get("msg", "Invalid value."))
            form.errors.setdefault(_field_of(error.get("loc", ())), message)
        return None


def errors_of(error: ApiError) -> dict[str, str]:
    """A service's refusal as field messages (its ``fields``), else the form's message."""
    if error.fields:
        return {name: " ".join(messages) for name, messages in error.fields.items()}
    return {FORM: error.message}


def whole_number(form: Form, name: str, *, low: int = 0, high: int = 2**63 - 1) -> int | None:
    """A typed whole number in [low, high]; None (with a message) otherwise, or when
    nothing was typed."""
    text = form.get(name)
    if not text:
        return None
    if not (text.isascii() and text.isdigit()) or not low <= int(text) <= high:
        form.errors[name] = f"A whole number from {low} to {high}."
        return None
    return int(text)


@contextmanager
def refusals_to(form: Form, refuse: Callable[[ApiError], None] | None = None) -> Iterator[None]:
    """A 400 the block's service call raises becomes the form's messages (``refuse``, by
    default ``errors_of``), and the form is shown again; any other error goes on."""
    try:
        yield
    except ApiError as error:
        if error.status_code != 400:
            raise
        if refuse is None:
            form.refuse(errors_of(error))
        else:
            refuse(error)
