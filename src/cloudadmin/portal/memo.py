"""A bounded memo of rendered parts, kept in each process (nothing is shared between
processes: a part is the same wherever it is rendered)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Memo(Generic[V]):
    """At most ``size`` values, the least recently used going first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._kept: OrderedDict[Hashable, V] = OrderedDict()

    def get(self, key: Hashable, make: Callable[[], V], *, keep: bool = True) -> V:
        """The value kept for ``key``, or ``make()``'s, kept unless ``keep`` is false
        (a part made from a long input is made each time: the memo stays small)."""
        found = self._kept.get(key)
        if found is not None:
            self._kept.move_to_end(key)
            return found
        made = make()
        if keep:
            self._kept[key] = made
            if len(self._kept) > self.size:
                self._kept.popitem(last=False)
        return made
