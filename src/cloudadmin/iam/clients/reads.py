"""Reading accounts: GET /iam/clients, /iam/clients/{clientId}, /iam/clients/me.

Who may read what (docs/iam.md, "Reading accounts"): one account follows the same
visibility as PATCH (docs/access.md: operator any, reseller itself and its clients, a
seller its assigned clients, anyone else its own account); the list is the reseller's
operation (and a portal seller's), so client administrators and members get 403 before
anything is read.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession
from starlette.datastructures import URL

from cloudadmin.auth.caller import Caller, CallerKind
from cloudadmin.auth.scoping import require
from cloudadmin.errors import NotFound
from cloudadmin.iam.clients import listing, repository
from cloudadmin.iam.clients.query import ClientListQuery, ClientPage
from cloudadmin.iam.clients.schemas import Client
from cloudadmin.iam.clients.service import NOT_FOUND, present, presented
from cloudadmin.kit.pagination import page_links


async def get(session: AsyncSession, caller: Caller, client_id: int) -> Client:
    account = await repository.get_visible(session, caller, client_id)
    if account is None:
        raise NotFound(NOT_FOUND)
    return await present(session, account, caller)


async def me(session: AsyncSession, caller: Caller) -> Client:
    """The caller's home account (never deleted: its keys would not authenticate)."""
    return await get(session, caller, caller.account_id)


async def list_clients(
    session: AsyncSession, caller: Caller, q: ClientListQuery, *, url: URL
) -> list[Client] | ClientPage:
    """Without ``limit`` every match as a plain array, with it a page (the provider's
    GetClientsResponse: ClientsArray or ClientsPaginatedArray)."""
    require(caller, CallerKind.reseller, CallerKind.seller)
    ids = await listing.matching_ids(session, caller, q)
    end = None if q.limit is None else q.offset + q.limit
    wanted = ids[q.offset : end] if q.offset < len(ids) else []
    rows = await listing.accounts(session, wanted)
    users = await listing.users_by_account(session, wanted)
    results = [presented(row, users.get(row.id, []), caller) for row in rows]
    if q.limit is None:
        return results
    nxt, prev = page_links(url, count=len(ids), limit=q.limit, offset=q.offset)
    return ClientPage(count=len(ids), next=nxt, previous=prev, results=results)
