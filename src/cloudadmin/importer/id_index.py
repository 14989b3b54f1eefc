"""Record ids and the index of each in the document's list, for the addendums of a
large load: a dict of ten million ids held about a gigabyte, the largest thing a load
read in parts still kept.

Ids that rise by one from record to record (an export's, a generator's) are kept as
runs: three numbers for each run, whatever its length. Ids that rise with gaps take
a run each (24 bytes); an id at or below the highest so far, or not an integer, goes
into a dict, as before.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from typing import Any


class IdIndex:
    """The mapping ``id -> index`` the catalogue keeps of a kind's records (``in``,
    ``[]``, ``[] =`` and ``setdefault``)."""

    def __init__(self) -> None:
        # Run r holds the ids starts[r] .. starts[r] + lengths[r] - 1, at the indexes
        # firsts[r] onwards; the runs rise.
        self._starts = array("q")
        self._firsts = array("q")
        self._lengths = array("q")
        self._other: dict[Any, int] = {}

    def __len__(self) -> int:
        return sum(self._lengths) + len(self._other)

    def _run_of(self, ident: int) -> int | None:
        run = bisect_right(self._starts, ident) - 1
        if run >= 0 and ident < self._starts[run] + self._lengths[run]:
            return run
        return None

    def __contains__(self, ident: object) -> bool:
        if type(ident) is int and self._starts and self._run_of(ident) is not None:
            return True
        return ident in self._other

    def __getitem__(self, ident: Any) -> int:
        if type(ident) is int and self._starts:
            run = self._run_of(ident)
            if run is not None:
                return self._firsts[run] + ident - self._starts[run]
        return self._other[ident]

    def get(self, ident: Any, default: Any = None) -> Any:
        if ident in self:
            return self[ident]
        return default

    def __setitem__(self, ident: Any, index: int) -> None:
        """Only for an id not in the index (the catalogue looks first)."""
        starts = self._starts
        if type(ident) is not int or not -(2**63) <= ident < 2**63 or not 0 <= index < 2**63:
            self._other[ident] = index
            return
        if starts:
            last = len(starts) - 1
            top = starts[last] + self._lengths[last]  # one past the highest id in runs
            if ident < top:
                self._other[ident] = index
                return
            if ident == top and index == self._firsts[last] + self._lengths[last]:
                self._lengths[last] += 1
                return
        starts.append(ident)
        self._firsts.append(index)
        self._lengths.append(1)

    def extend(self, idents: list[Any], first_index: int) -> bool:
        """Notes ``idents`` at the indexes from ``first_index`` on when they rise by one
        from above every id noted so far (no duplicate then, of each other or of those);
        else notes nothing and answers False: the caller notes them one by one."""
        if not idents:
            return True
        first, count = idents[0], len(idents)
        if type(first) is not int or first_index < 0 or first + count > 2**63:
            return False
        starts, lengths, firsts = self._starts, self._lengths, self._firsts
        top = starts[-1] + lengths[-1] if starts else None
        if (top is not None and first < top) or first < -(2**63):
            return False
        if idents != list(range(first, first + count)):
            return False
        if first == top and first_index == firsts[-1] + lengths[-1]:
            lengths[-1] += count
        else:
            starts.append(first)
            firsts.append(first_index)
            lengths.append(count)
        return True

    def setdefault(self, ident: Any, index: int) -> int:
        if ident in self:
            return self[ident]
        self[ident] = index
        return index
