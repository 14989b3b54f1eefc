"""What a caller may see and do. Every route goes through these functions."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, or_, select, true

from cloudadmin.auth.caller import Caller, CallerKind
from cloudadmin.db.models import Client
from cloudadmin.errors import PermissionDenied


def visible_accounts(caller: Caller, column: Any) -> ColumnElement[bool]:
    """SQL condition: ``column`` (an account id) is an account the caller may see.

    Operator: every account. Reseller: itself and its clients. Anyone else: its
    own account.
    """
    if caller.is_operator:
        return true()
    if caller.is_reseller:
        clients = select(Client.id).where(Client.reseller_id == caller.account_id)
        return or_(column == caller.account_id, column.in_(clients.scalar_subquery()))
    return column == caller.account_id


def require(caller: Caller, *kinds: CallerKind) -> None:
    """403 unless the caller is one of ``kinds`` (operators always pass)."""
    if caller.is_operator or caller.kind in kinds:
        return
    raise PermissionDenied()
