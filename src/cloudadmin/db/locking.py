"""Reading a row to change it: the row stays locked until the request's transaction
ends, so concurrent changes of one row take turns (issue 13).

PostgreSQL: SELECT ... FOR NO KEY UPDATE (FOR UPDATE before a DELETE). A change that
comes second waits, then finds the row as the first one left it: gone after a DELETE
(it answers 404, and exactly one DELETE wins), or no longer matching its conditions
(an account marked deleted). NO KEY leaves rows that only reference this one (foreign
keys) free to be written meanwhile. SQLite drops the clause: its transactions already
run one writer at a time (BEGIN IMMEDIATE, db/engine.py).
"""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import Select

S = TypeVar("S", bound=Select[*tuple[Any, ...]])


def for_change(stmt: S, *of: Any, removal: bool = False) -> S:
    """``stmt`` locking the rows it reads (of the tables ``of``, when it joins others);
    ``removal``: the row is about to be deleted."""
    locked = stmt.with_for_update(of=list(of) or None, key_share=not removal)
    # Values as the lock found them, should the session hold an older copy.
    return locked.execution_options(populate_existing=True)
