"""A large load document read a part at a time, so that its addendums never sit in
memory all at once (docs/import.md, "Large documents").

A document of ten million addendums is 4 GB of JSON. Parsed whole, it held 12-14 GB
while it loaded, and the pages touched for the first time cost this VM more than the
parsing itself. A file of ``STREAM_BYTES`` or more is mapped instead, and read in
order:

- the top-level object key by key (keys without escapes; anything else, and any
  surprise below, answers ``None`` or raises ``Unstreamable``, and the caller reads the
  document whole, with every result and message as before);
- every value but the addendums whole, by msgspec: its end is where msgspec reports
  "trailing characters", so no scanner written here decides where JSON text ends;
- the addendums' array in parts of about ``PART_BYTES``, each cut after a record,
  at a ``}`` followed by a comma and a ``{``. Such a cut may fall inside a string or a
  nested object: then the part is not a JSON array and the next cut is tried. When
  the text up to the cut is an array, the cut is a real one: JSON's grammar has one
  parse, so ``[A]`` and ``[B]`` being arrays makes ``[A,B]`` the array of their
  records. The array's last part ends where msgspec reports its trailing characters.

Parts are decoded as fast_json decodes a whole document: as ``AddendumJson`` structs
when every record of the part is plainly shaped, else as plain values.
"""

from __future__ import annotations

import mmap
import re
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

import msgspec

from cloudadmin.importer import fast_json
from cloudadmin.importer.addendum_copy import AddendumJson

STREAMED_KEY: Final = "addendums"
# Files at least this large are read in parts (tests lower it).
STREAM_BYTES = 256 << 20
# About ten thousand addendums a part.
PART_BYTES = 4 << 20
# Cuts tried for one part before the document is read whole: a cut lands inside a
# string only when the string holds "},{", which no generated text does.
_TRIES = 16
# The mapped pages already read are let go every so many bytes, so that the file does
# not stay resident in the process (it stays in the page cache).
_RELEASE = 64 << 20
# A value other than the addendums is looked for in windows from this size up.
_WINDOW = 1 << 20

_WS = rb"[ \t\n\r]*"
_SKIP = re.compile(_WS)
_KEY = re.compile(rb'"([A-Za-z0-9_]*)"' + _WS + rb":" + _WS)
_CUT = re.compile(rb"\}" + _WS + rb"," + _WS + rb"\{")
_TRAILING = re.compile(r"trailing characters \(byte (\d+)\)")

_TYPED_PART = msgspec.json.Decoder(list[AddendumJson], float_hook=Decimal)
_SKIPPED = msgspec.json.Decoder(msgspec.Raw)


class Unstreamable(Exception):
    """The document cannot be read in parts after all: read it whole."""


def read(path: Path, at_least: int) -> dict[str, Any] | None:
    """The document at ``path`` with its addendums as ``StreamedRecords`` once their
    array holds ``at_least`` records (fewer: the document as fast_json parses it, all
    lists); None when it must be read whole."""
    try:
        text = _Mapped(path)
    except ValueError:  # an empty file cannot be mapped
        return None
    try:
        document = text.open_object()
        while (key := text.next_key(document)) is not None:
            if key == STREAMED_KEY and text.at_array():
                records = StreamedRecords(text, document)
                if not records.buffer(at_least):
                    return records.settled()
                return document
            document[key] = text.value()
        text.close()
        return document
    except Unstreamable:
        text.close()
        return None


class StreamedRecords:
    """The addendums of a document read in parts: ``chunks`` gives them, and then
    ``after`` holds the top-level keys that followed them in the file."""

    def __init__(self, text: _Mapped, document: dict[str, Any]) -> None:
        self._text = text
        self._document = document
        document[STREAMED_KEY] = self
        self._parts: list[list[Any]] = []
        self._done = False
        # Records decoded so far.
        self.count = 0
        self.after: dict[str, Any] = {}

    def buffer(self, at_least: int) -> bool:
        """Decodes parts ahead until ``at_least`` records are known; False when the
        array ended first."""
        while self.count < at_least:
            part = self._next_part()
            if part is None:
                return False
            self._parts.append(part)
        return True

    def chunks(self, size: int) -> Iterator[tuple[int, list[Any]]]:
        """The records ``size`` at a time with the index of the first; raises
        ``Unstreamable`` (the load must start again, whole) if a part cannot be read."""
        start = 0
        for part in self._all_parts():
            for offset in range(0, len(part), size):
                yield start + offset, part[offset : offset + size]
            start += len(part)

    def settled(self) -> dict[str, Any]:
        """The whole document with the addendums as one list (in memory): structs when
        every part was plainly shaped, else dicts throughout, as a whole document's
        parse gives them (the loader looks at the first record to tell)."""
        parts = list(self._all_parts())
        if not all(type(part[0]) is AddendumJson for part in parts if part):
            parts = [fast_json.plain(part) for part in parts]
        records = [record for part in parts for record in part]
        self._document[STREAMED_KEY] = records
        self._document.update(self.after)
        return self._document

    def _all_parts(self) -> Iterator[list[Any]]:
        while self._parts:
            yield self._parts.pop(0)
        while (part := self._next_part()) is not None:
            yield part

    def _next_part(self) -> list[Any] | None:
        if self._done:
            return None
        try:
            part = self._text.next_part()
            if part is None:
                self._done = True
                self._read_after()
                return None
        except Unstreamable:
            self._text.close()
            raise
        self.count += len(part)
        return part

    def _read_after(self) -> None:
        text = self._text
        try:
            while (key := text.next_key(self._document, self.after)) is not None:
                self.after[key] = text.value()
        finally:
            text.close()


class _Mapped:
    """The file's bytes, mapped, and a position in them."""

    def __init__(self, path: Path) -> None:
        with path.open("rb") as file:
            self.map = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        self.view = memoryview(self.map)
        self.pos = 0
        self._released = 0
        self._first_key = True
        # The streamed array: "before" its "[", "in" it, "after" its "]".
        self._array = "before"

    def close(self) -> None:
        try:
            self.view.release()
            self.map.close()
        except BufferError:  # a view held by a traceback: the map closes with it
            pass

    def _skip(self) -> int:
        match = _SKIP.match(self.view, self.pos)
        assert match is not None  # the pattern matches the empty string
        self.pos = match.end()
        return self.pos

    def _char(self) -> bytes:
        return bytes(self.view[self.pos : self.pos + 1])

    def open_object(self) -> dict[str, Any]:
        self._skip()
        if self._char() != b"{":
            raise Unstreamable
        self.pos += 1
        return {}

    def next_key(self, *seen: dict[str, Any]) -> str | None:
        """The next top-level key (the position moves past its colon), or None at the
        object's end (then only whitespace may follow)."""
        self._skip()
        char = self._char()
        if char == b"}":
            self.pos += 1
            if self._skip() != len(self.view):
                raise Unstreamable
            return None
        if not self._first_key:
            if char != b",":
                raise Unstreamable
            self.pos += 1
            self._skip()
        self._first_key = False
        match = _KEY.match(self.view, self.pos)
        if match is None:
            raise Unstreamable  # a key with escapes, or not JSON
        key = match.group(1).decode("ascii")
        if any(key in keys for keys in seen):
            raise Unstreamable  # json.loads keeps the last of a repeated key
        self.pos = match.end()
        return key

    def at_array(self) -> bool:
        return self._char() == b"["

    def value(self) -> Any:
        """The value at the position, decoded whole."""
        end = self._value_end(self.pos)
        try:
            value = fast_json.UNTYPED.decode(self.view[self.pos : end])
        except fast_json.REJECTED:
            raise Unstreamable from None
        self.pos = end
        return value

    def _value_end(self, start: int) -> int:
        """Where the JSON value at ``start`` ends: msgspec skips it in ever larger
        windows until it reports the characters that follow it."""
        size = _WINDOW
        while True:
            stop = min(start + size, len(self.view))
            found = _trailing(self.view[start:stop])
            if found is not None:
                return start + found
            if stop == len(self.view):  # no closing brace after it, or not JSON
                raise Unstreamable
            size *= 4

    def next_part(self) -> list[Any] | None:
        """The next part of the array at the position (None after its end)."""
        if self._array == "after":
            return None
        if self._array == "before":
            self._array = "in"
            self.pos += 1  # the "["
            self._skip()
            if self._char() == b"]":
                self.pos += 1
                self._array = "after"
                return None
        start = self.pos
        search_from = start + PART_BYTES
        for _ in range(_TRIES):
            cut = _CUT.search(self.view, search_from) if search_from < len(self.view) else None
            part = self._records(start, cut.start() + 1 if cut is not None else len(self.view))
            if part is not None:
                self._release()
                return part
            if cut is None:
                break
            search_from = cut.end()
        raise Unstreamable

    def _records(self, start: int, stop: int) -> list[Any] | None:
        """The records from ``start`` to the cut at ``stop`` (the position moves to the
        next record), or to the array's end if it comes first (the position moves past
        the "]"); None when the cut is inside a record."""
        body = self.view[start:stop]
        try:
            part = _decode(b"".join((b"[", body, b"]")))
        except fast_json.REJECTED:
            pass
        else:
            self.pos = stop
            self._skip()
            self.pos += 1  # the comma the cut matched
            self._skip()
            return part
        # The array may end before the cut: then msgspec reads "[" and its records
        # and stops at what follows the "]".
        opened = b"".join((b"[", body))
        end = _trailing(opened)
        if end is None:
            return None
        try:
            part = _decode(opened[:end])
        except fast_json.REJECTED:
            raise Unstreamable from None
        self.pos = start + end - 1
        self._array = "after"
        return part

    def _release(self) -> None:
        released = self.pos - self.pos % mmap.PAGESIZE
        if released - self._released >= _RELEASE:
            self.map.madvise(mmap.MADV_DONTNEED, 0, released)
            self._released = released


def _trailing(data: Any) -> int | None:
    """Where the characters after the JSON value at the start of ``data`` begin, when
    msgspec reads one there (None: it does not, or ``data`` holds only the value)."""
    try:
        _SKIPPED.decode(data)
    except msgspec.DecodeError as exc:
        found = _TRAILING.search(str(exc))
        # msgspec counts that byte from 1. Were it ever to count from 0, the value
        # would be cut one byte short and fail to decode: the document is then read
        # whole, never wrongly.
        return int(found.group(1)) - 1 if found is not None else None
    return None


def _decode(data: bytes) -> list[Any]:
    """A part's records: ``AddendumJson`` structs when all are plainly shaped."""
    try:
        part: list[Any] = _TYPED_PART.decode(data)
    except msgspec.ValidationError:
        part = fast_json.UNTYPED.decode(data)
    return part
