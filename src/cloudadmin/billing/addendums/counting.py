"""How the list counts its matches, exactly, without scanning a million rows.

Triggers (migrations 0005 and 0011) keep three tables of counts in the addendums' own
transactions: per (status, product), per (client, reseller, status, product) and per
UTC day of creation. A query whose filters and scope only involve those columns is
counted by summing counter rows; any other query counts the matching addendums
(docs/billing.md).
"""

from __future__ import annotations

from typing import NamedTuple

from sqlalchemy.ext.asyncio import AsyncConnection

from cloudadmin.auth.caller import Caller
from cloudadmin.billing.addendums import repository
from cloudadmin.billing.addendums.creation_days import CREATION_FILTERS, creation_range, day_range
from cloudadmin.billing.addendums.filters import Where, counts_where, product_ids
from cloudadmin.billing.addendums.schemas import AddendumQuery

# Filters the counters can answer; any other filter given means a real count.
COUNTER_FILTERS = {"status", "product_id", "product_internal_name", "client_id", "reseller_id"}
NOT_FILTERS = {"limit", "offset", "ordering"}
_FILTERS = set(AddendumQuery.model_fields) - NOT_FILTERS


class Counted(NamedTuple):
    total: int
    # Every match's id lies in [low, high] when known (the creation days' bounds).
    ids: tuple[int, int] | None = None


def counter_kind(q: AddendumQuery, caller: Caller) -> str | None:
    """'totals', 'counts', 'days' or None (count the rows) for this query and caller."""
    given = {name for name in _FILTERS if getattr(q, name) is not None}
    if given and given <= CREATION_FILTERS and caller.is_operator:
        return "days"
    if given - COUNTER_FILTERS:
        return None
    if caller.is_operator:
        return "counts" if given & {"client_id", "reseller_id"} else "totals"
    if caller.is_reseller:
        return "counts"
    return None  # an account's own addendums (client or payer): few, counted directly


async def count(
    conn: AsyncConnection, q: AddendumQuery, caller: Caller, where: Where
) -> Counted:
    kind = counter_kind(q, caller)
    if kind == "days":
        return await _count_created(conn, q)
    if kind == "totals":
        products = product_ids(q)
        return Counted(await repository.sum_totals(
            conn, statuses=q.status, products=None if products is None else sorted(products)))
    if kind == "counts":
        return Counted(await repository.sum_counts(
            conn, counts_where(q, caller, repository.dialect_of(conn))))
    return Counted(await repository.count_rows(conn, where))


async def _count_created(conn: AsyncConnection, q: AddendumQuery) -> Counted:
    bounds = creation_range(q)
    if bounds is None:
        return Counted(0)
    total, low, high = await repository.count_days(conn, day_range(*bounds))
    return Counted(total, None if low is None or high is None else (low, high))
