"""Which reseller account a new seller or client belongs to."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Caller, CallerKind
from cloudadmin.auth.scoping import require
from cloudadmin.db.models import Client
from cloudadmin.errors import ValidationError
from cloudadmin.iam.clients.repository import get_reseller


async def owning_reseller(
    session: AsyncSession, caller: Caller, requested: int | None, *, missing: str
) -> Client:
    """An operator may name the reseller (``requested``, the extra body field
    ``reseller``); otherwise it is the caller's own account, which must be a reseller.
    400 naming ``reseller`` when there is none (``missing`` says what to do). Only an
    operator or a reseller may (``require``)."""
    require(caller, CallerKind.reseller)
    if caller.is_operator and requested is not None:
        reseller_id = requested
    elif caller.account_type == "reseller":
        reseller_id = caller.account_id
    else:
        raise ValidationError.field("reseller", missing)
    reseller = await get_reseller(session, reseller_id)
    if reseller is None:
        raise ValidationError.field("reseller", "Not a reseller account.")
    return reseller
