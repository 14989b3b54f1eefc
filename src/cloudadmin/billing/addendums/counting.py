"""How the list counts its matches, exactly, without scanning a million rows.

Triggers (migration 0005) keep two tables of counts in the addendums' own
transactions: per (status, product) and per (client, reseller, status, product).
A query whose filters and scope only involve those columns is counted by summing a
handful of counter rows; any other query counts the matching addendums (docs/billing.md).
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from cloudadmin.auth.caller import Caller
from cloudadmin.billing.addendums import repository
from cloudadmin.billing.addendums.filters import Where, counts_where, product_ids
from cloudadmin.billing.addendums.schemas import AddendumQuery

# Filters the counters can answer; any other filter given means a real count.
COUNTER_FILTERS = {"status", "product_id", "product_internal_name", "client_id", "reseller_id"}
NOT_FILTERS = {"limit", "offset", "ordering"}
_FILTERS = set(AddendumQuery.model_fields) - NOT_FILTERS


def counter_kind(q: AddendumQuery, caller: Caller) -> str | None:
    """'totals', 'counts' or None (count the rows) for this query and caller."""
    given = {name for name in _FILTERS if getattr(q, name) is not None}
    if given - COUNTER_FILTERS:
        return None
    if caller.is_operator:
        return "counts" if given & {"client_id", "reseller_id"} else "totals"
    if caller.is_reseller:
        return "counts"
    return None  # an account's own addendums (client or payer): few, counted directly


async def count(conn: AsyncConnection, q: AddendumQuery, caller: Caller, where: Where) -> int:
    kind = counter_kind(q, caller)
    if kind == "totals":
        products = product_ids(q)
        return await repository.sum_totals(
            conn, statuses=q.status, products=None if products is None else sorted(products))
    if kind == "counts":
        return await repository.sum_counts(
            conn, counts_where(q, caller, repository.dialect_of(conn)))
    return await repository.count_rows(conn, where)
