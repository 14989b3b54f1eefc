"""Redaction of secrets in request bodies, query strings and connection strings
(docs/activity-log.md, "Secrets").

Every function here does work linear in its input and never recurses: it runs on the
event loop for every logged request, on whatever a client sends.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlencode

MASK = "***"

# A key or query parameter is secret when its name, lower-cased and without the
# separators ``-``, ``_``, ``.`` and space (``X-Api-Key`` -> ``xapikey``), holds one of
# SECRET_NAME_PARTS or is one of SECRET_NAMES. The list is documented in
# docs/activity-log.md; auth_header_value is the secret header of a webhook subscription
# (its name, auth_header_name, is not secret).
SECRET_NAME_PARTS = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "credential",
    "privatekey",
    "accesskey",
    "authheadervalue",
)
SECRET_NAMES = frozenset({"key", "auth", "authorization", "pwd"})
_SEPARATORS = str.maketrans("", "", "-_. ")


def is_secret_name(name: str) -> bool:
    """Whether a key or parameter named ``name`` holds a secret (case and the
    separators ``-``, ``_``, ``.`` and space do not count)."""
    folded = name.lower().translate(_SEPARATORS)
    return folded in SECRET_NAMES or any(part in folded for part in SECRET_NAME_PARTS)


_SCHEME = re.compile(r"[a-z][a-z0-9+.\-]*://", re.I)
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_SPACE = re.compile(r"\s")
_SEPARATOR = re.compile(r"(?<=[a-zA-Z0-9+.\-])://")
# Where a URL's authority ends: its path, query or fragment, or the end of its token.
_AUTHORITY_END = re.compile(r"[/?#\s]")


def password_span(text: str, start: int = 0) -> tuple[int, int] | None:
    """Where the password of the URL at ``text[start:]`` is (``user:<here>@host``), found
    by parsing the URL, not by searching for the password's text; None without one.

    The userinfo ends at the authority's last ``@`` (the authority ends at the first
    ``/``, ``?`` or ``#``). A string that is not a valid URL because its password holds
    a raw ``/`` or ``?`` (``u:pa/ss@host``) is masked up to its last ``@`` before any
    space; one whose password holds a raw space (``u:pa ss@host``: no ``@``, ``/``,
    ``?`` or ``#`` before the space) up to the next ``@`` after it: when in doubt, mask
    too much rather than show part of a password.
    """
    found = _SCHEME.match(text, start)
    if found is None:
        return None
    return _Masker(text, cut=False).span_after(found.end())


class _Masker:
    """The password spans of the URLs of one text, found left to right. Every search
    starts where the last search of its kind stopped or later, and is remembered, so
    the whole text is read a bounded number of times however many URLs it holds."""

    def __init__(self, text: str, *, cut: bool) -> None:
        self.text = text
        # The text was cut from a longer one: a URL running into its end may have lost
        # the rest of its password, so it is masked to the end.
        self.cut = cut
        self._space = -1  # the first whitespace at or after the last token looked at
        self._token_at = (-1, -1)  # (token end, its last "@" or -1)
        self._next_at = -1  # the first "@" at or after the last place looked from

    def _token_end(self, begin: int) -> int:
        if self._space < begin:
            space = _SPACE.search(self.text, begin)
            self._space = space.start() if space else len(self.text)
        return self._space

    def _last_at_of_token(self, begin: int, stop: int) -> int:
        if self._token_at[0] != stop:
            self._token_at = (stop, self.text.rfind("@", begin, stop))
        at = self._token_at[1]
        return at if at >= begin else -1

    def _first_at(self, begin: int) -> int:
        if self._next_at < begin:
            at = self.text.find("@", begin)
            self._next_at = at if at != -1 else len(self.text)
        return self._next_at if self._next_at < len(self.text) else -1

    def span_after(self, begin: int) -> tuple[int, int] | None:
        """The password span of the URL whose authority starts at ``begin``."""
        text = self.text
        stop = self._token_end(begin)
        ended = _AUTHORITY_END.search(text, begin, stop)
        end = ended.start() if ended else stop
        at_sign = text.rfind("@", begin, end)
        if at_sign == -1:
            at_sign = self._last_at_of_token(begin, stop)
        if at_sign != -1:
            colon = text.find(":", begin, at_sign)
            if colon == -1:
                return None
            if self.cut and stop == len(text) and end == stop:
                return colon + 1, len(text)  # the authority may go on past the cut
            return colon + 1, at_sign
        # No "@" in the token, and the authority did not end in it: a password with a
        # raw space (u:pa ss@host) ends at the next "@" after it, if there is a colon.
        colon = text.find(":", begin, end)
        if colon == -1 or end != stop:
            return None
        at_sign = self._first_at(stop)
        if at_sign == -1:
            return (colon + 1, len(text)) if self.cut else None
        # From there on as for any URL: up to the authority's last "@".
        stop = self._token_end(at_sign)
        ended = _AUTHORITY_END.search(text, at_sign, stop)
        end = ended.start() if ended else stop
        if self.cut and stop == len(text) and end == stop:
            return colon + 1, len(text)
        return colon + 1, text.rfind("@", at_sign, end)


def _url_authorities(text: str) -> Iterator[tuple[int, int]]:
    """(start of ``://``, start of the authority) of every URL in ``text``: a ``://``
    after at least one letter of a scheme. Found by searching for ``://`` after a scheme
    character, not with a scheme pattern tried at every position (which is quadratic in
    a long run of letters); the look back for a letter stops at the ``:`` of the
    previous ``://`` at the latest."""
    for found in _SEPARATOR.finditer(text):
        at = found.start()
        back = at - 1
        while back >= 0 and text[back] in _SCHEME_CHARS and not text[back].isalpha():
            back -= 1
        if back >= 0 and text[back].isalpha() and text[back].isascii():
            yield at, at + 3


def mask_url_password(text: str, *, cut: bool = False) -> str:
    """``amqp://user:pw@host/vh`` -> ``amqp://user:***@host/vh``, for every URL in
    ``text``; text without a URL password unchanged. ``cut``: the text is the start of a
    longer one, and a password running into its end is masked to the end."""
    if "@" not in text and not cut:  # every password ends at an "@"
        return text
    out: list[str] = []
    done = 0
    masker = _Masker(text, cut=cut)
    for separator, begin in _url_authorities(text):
        if separator < done:
            continue
        span = masker.span_after(begin)
        if span is None:
            continue
        out.append(text[done : span[0]])
        out.append(MASK)
        done = span[1]
    out.append(text[done:])
    return "".join(out)


def _mask_text(text: str, *, cut: bool = False) -> str:
    return mask_url_password(text, cut=cut) if "://" in text else text


def redact(value: Any, max_chars: int | None = None) -> Any:
    """A copy of a decoded JSON value with every secret replaced by a mask: the value of
    every key with a secret name (is_secret_name), and the password of every URL in a
    string.

    Iterative, so a value nested however deep cannot exhaust the stack. With
    ``max_chars``, only what fits in the first ``max_chars`` characters of its JSON text
    is looked at: the copy keeps the value's start, in document order, up to that many
    characters of keys, strings and scalars (a string cut to fit, masked as cut), and
    drops the rest: its JSON text starts as the whole value's would for at least that
    many characters, but for the masks.
    """
    left = max_chars if max_chars is not None else -1
    root: list[Any] = []
    # Each container being copied: its (key, item) pairs (key None in a list) and its copy.
    stack: list[tuple[Iterator[tuple[Any, Any]], dict[Any, Any] | list[Any]]] = [
        (iter([(None, value)]), root)
    ]
    while stack:
        pairs, copy = stack[-1]
        pair = next(pairs, None)
        if pair is None:
            stack.pop()
            continue
        if max_chars is not None and left <= 0:
            break
        key, item = pair
        if isinstance(key, str):
            left -= len(key)
        new: Any
        if isinstance(key, str) and is_secret_name(key):
            new = MASK if item is not None else None
            left -= 3
        elif isinstance(item, dict):
            new = {}
            stack.append((iter(item.items()), new))
        elif isinstance(item, list):
            new = []
            stack.append((((None, v) for v in item), new))
        elif isinstance(item, str):
            if max_chars is not None and len(item) > left:
                new = _mask_text(item[: max(left, 0)], cut=True)
            else:
                new = _mask_text(item)
            left -= len(item)
        else:
            new = item
            left -= 1
        if isinstance(copy, dict):
            copy[key] = new
        else:
            copy.append(new)
    return root[0] if root else None


def redact_query(query: str) -> str:
    """A raw query string with the value of every secret parameter masked
    (``?password=x&a=1`` -> ``password=***&a=1``), and the password of every URL in a
    value; unchanged when there is none."""
    if not query:
        return ""
    pairs = parse_qsl(query, keep_blank_values=True)
    masked = [(k, MASK if is_secret_name(k) else _mask_text(v)) for k, v in pairs]
    if masked == pairs:
        return query
    return urlencode(masked)
