"""Refuses text no database can store, before any handler sees it (docs/errors.md).

PostgreSQL cannot store NUL (U+0000) in text, and no UTF-8 database can store an
unpaired surrogate (U+D800..U+DFFF, which JSON can spell ``"\\ud800"``). Field rules
let both through: a length limit counts them as characters like any other. Instead of
a rule on every field, every string of the request is looked at once: the query
string, the path parameters and each key and value of a JSON body. The first place
holding one answers 400 naming the field, in the naming of the other validation errors
(``full_name``, ``items.0.name``). SQLite behaves the same, though it could store NUL.

A JSON body nested deeper than ``max_json_depth`` is refused here too, before anything
parses it: the parser, the body's validation and the activity log all go down it level
by level.
"""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.requests import Request

from cloudadmin.errors import ValidationError
from cloudadmin.kit.body import nested_deeper_than
from cloudadmin.kit.storable import REPLACEMENT, UNSTORABLE
from cloudadmin.web.app_state import app_state
from cloudadmin.web.error_render import field_name

# In a UTF-8 JSON body both can only be spelled as a \u escape, or (surrogates, read
# leniently by the JSON decoder) as the bytes ED A0..BF; a NUL byte means UTF-16/32.
# Most bodies hold none of these and are not parsed a second time.
_MAYBE_UNSTORABLE = re.compile(rb"\\u|\x00|\xed[\xa0-\xbf]")

NUL_MESSAGE = "Null characters are not allowed."
SURROGATE_MESSAGE = "Unpaired surrogate characters are not allowed."


def too_deep_message(depth: int) -> str:
    return f"Arrays and objects may nest at most {depth} levels deep."


def unstorable(text: str) -> str | None:
    """The message for a string the database cannot store, or None."""
    found = UNSTORABLE.search(text)
    if found is None:
        return None
    return NUL_MESSAGE if found.group() == "\x00" else SURROGATE_MESSAGE


def _printable(part: Any) -> Any:
    """A key named in an error must itself be storable and encodable."""
    return UNSTORABLE.sub(REPLACEMENT, part) if isinstance(part, str) else part


def _first_in_json(value: Any, loc: tuple[Any, ...]) -> tuple[tuple[Any, ...], str] | None:
    """The location and message of the first unstorable string (a key comes before
    its value), in document order. Iterative: a body nested as deep as the JSON parser
    allows must not overflow the stack."""
    pending: list[tuple[tuple[Any, ...], Any]] = [(loc, value)]
    while pending:
        here, item = pending.pop()
        if isinstance(item, str):
            message = unstorable(item)
            if message:
                return (*here[:-1], _printable(here[-1])), message
        elif isinstance(item, dict):
            children: list[tuple[tuple[Any, ...], Any]] = []
            for key, child in item.items():
                children += [((*here, key), key), ((*here, key), child)]
            pending.extend(reversed(children))
        elif isinstance(item, list):
            pending.extend(reversed([((*here, i), child) for i, child in enumerate(item)]))
    return None


def _refuse(loc: tuple[Any, ...], message: str) -> ValidationError:
    name = field_name(loc)
    return ValidationError.field("body" if name == "non_field_errors" else name, message)


async def check_request_text(request: Request, *, json_body: bool) -> None:
    """Raise a 400 for the first NUL or unpaired surrogate of the request's text, or for
    a JSON body nested too deep."""
    for key, value in request.query_params.multi_items():
        for text in (key, value):
            message = unstorable(text)
            if message:
                raise _refuse(("query", _printable(key)), message)
    for key, value in request.path_params.items():
        if isinstance(value, str) and (message := unstorable(value)):
            raise _refuse(("path", key), message)
    if not json_body or request.method not in ("POST", "PUT", "PATCH"):
        return
    raw = await request.body()
    depth = app_state(request.app).settings.max_json_depth
    if nested_deeper_than(raw, depth):
        raise ValidationError.field("body", too_deep_message(depth))
    if not raw or not _MAYBE_UNSTORABLE.search(raw):
        return
    try:
        decoded = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, or too deep: FastAPI answers 400
        return
    found = _first_in_json(decoded, ("body",))
    if found:
        raise _refuse(*found)
