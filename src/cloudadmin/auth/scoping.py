"""What a caller may see and do. Every route goes through these functions.

Tenant scoping is written once, here: :func:`tenant_clause` is the SQL condition
"this row belongs to that account (or, for a reseller, to one of its clients)", and
every repository and the addendum list's statements build their scope with it. The
account may be a value or a bind parameter, so statements built once per shape (the
addendum list, docs/architecture.md) use it as well as those built per request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, or_, select, true

from cloudadmin.auth.caller import Caller, CallerKind
from cloudadmin.db.models import Client
from cloudadmin.errors import PermissionDenied


def clients_of(reseller: Any) -> Any:
    """Scalar subquery: the ids of the reseller's client accounts."""
    return select(Client.id).where(Client.reseller_id == reseller).scalar_subquery()


def clients_of_seller(seller: Any) -> Any:
    """Scalar subquery: the ids of the client accounts assigned to the seller."""
    return select(Client.id).where(Client.seller_id == seller).scalar_subquery()


def tenant_clause(
    account: Any, own: Sequence[Any], *, clients: Any | None = None
) -> ColumnElement[bool]:
    """SQL condition: one of the ``own`` columns names ``account``, or (a reseller's
    view) ``clients`` names one of its client accounts.

    ``account``: an account id, or a bind parameter holding it. ``own``: the columns
    that name the account a row belongs to (e.g. client and payer of an addendum).
    """
    conditions: list[ColumnElement[bool]] = [column == account for column in own]
    if clients is not None:
        conditions.append(clients.in_(clients_of(account)))
    return conditions[0] if len(conditions) == 1 else or_(*conditions)


def caller_scope(caller: Caller, own: Any, *, clients: Any | None = None) -> ColumnElement[bool]:
    """:func:`tenant_clause` for ``caller``: operators see every row; a reseller also
    the rows of its clients when ``clients`` is given; anyone else the rows of its own
    account. A seller: the rows of the clients assigned to it (``clients``, else ``own``,
    naming a client account), never its reseller's own."""
    if caller.is_operator:
        return true()
    if caller.seller_id is not None:
        column = clients if clients is not None else own
        return column.in_(clients_of_seller(caller.seller_id))  # type: ignore[no-any-return]
    return tenant_clause(caller.account_id, [own], clients=clients if caller.is_reseller else None)


def visible_accounts(caller: Caller, column: Any) -> ColumnElement[bool]:
    """SQL condition: ``column`` (an account id) is an account the caller may see.

    Operator: every account. Reseller: itself and its clients. Seller: the clients
    assigned to it. Anyone else: its own account.
    """
    return caller_scope(caller, column, clients=column)


def require(caller: Caller, *kinds: CallerKind) -> None:
    """403 unless the caller is one of ``kinds`` (operators always pass)."""
    if caller.is_operator or caller.kind in kinds:
        return
    raise PermissionDenied()


def refuse_seller(caller: Caller) -> None:
    """403 for a seller (docs/access.md, "The Admin Portal: sellers"): for the reads whose
    scope is written for accounts, not for a seller's assigned clients, so that none of
    them ever shows a seller its reseller's own rows."""
    if caller.seller_id is not None:
        raise PermissionDenied()
