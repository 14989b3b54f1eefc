"""GET/POST /iam/clients/{clientId}/tokens, GET/DELETE …/tokens/{tokenId}."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query

from cloudadmin.iam.api_tokens import service
from cloudadmin.iam.api_tokens.repository import TokenFilter
from cloudadmin.iam.api_tokens.schemas import ApiToken, ApiTokenCreated, TokenCreate
from cloudadmin.iam.clients.endpoints import ClientId
from cloudadmin.kit.ints import Id32, Id32Filter
from cloudadmin.web.deps import CurrentActor, CurrentCaller, Session
from cloudadmin.web.idempotency import SECRET_ANSWER, Idempotent
from cloudadmin.web.route import ApiRoute

router = APIRouter(route_class=ApiRoute, tags=["API Tokens"])

TokenId = Annotated[Id32, Path(description="API token id.")]
RoleQuery = Annotated[
    str | None,
    Query(
        max_length=100,
        description="Group id or name: 1 or Administrators, 2 or Users, "
        "5 or Engineers, 3009, 3022.",
    ),
]
IssuedBy = Annotated[Id32Filter | None, Query(description="Only the tokens issued by this user.")]
NotIssuedBy = Annotated[
    Id32Filter | None, Query(description="Only the tokens issued by anyone but this user.")
]
DeletedQuery = Annotated[
    bool,
    Query(description="true: only deleted tokens; false (default): only tokens not deleted."),
]


async def token_filter(
    role: RoleQuery = None,
    issued_by: IssuedBy = None,
    not_issued_by: NotIssuedBy = None,
    deleted: DeletedQuery = False,
) -> TokenFilter:
    """The list's query parameters (v1 and v2 alike); an unknown role matches nothing."""
    role_id = service.resolve_role(role) if role is not None else None
    return TokenFilter(
        role_id=role_id if role is None or role_id is not None else 0,
        issued_by=issued_by,
        not_issued_by=not_issued_by,
        deleted=deleted,
    )


TokenListFilter = Annotated[TokenFilter, Depends(token_filter)]


@router.get("/iam/clients/{clientId}/tokens", summary="List the API tokens of an account")
async def list_api_tokens(
    clientId: ClientId, session: Session, caller: CurrentCaller, flt: TokenListFilter
) -> list[ApiToken]:
    """Administrators (and resellers, operators) see every token of the account, members
    only those they issued. Never shows a token's secret."""
    return await service.list_tokens(session, caller, clientId, flt)


@router.post(
    "/iam/clients/{clientId}/tokens",
    summary="Issue an API token",
    dependencies=[SECRET_ANSWER],
)
async def create_api_token(
    clientId: ClientId,
    body: TokenCreate,
    session: Session,
    actor: CurrentActor,
    idempotency: Idempotent,
) -> ApiTokenCreated:
    """Issues a token that acts as the calling user with the given role (not above the
    caller's own: 400), in the caller's own account, expiring no later than the token
    that sends the request (400 naming `exp_date`). The answer's `token` is shown once."""
    return await service.create_token(session, actor, clientId, body, idempotency)


@router.get("/iam/clients/{clientId}/tokens/{tokenId}", summary="Read an API token")
async def get_api_token(
    clientId: ClientId, tokenId: TokenId, session: Session, caller: CurrentCaller
) -> ApiToken:
    """Members read only the tokens they issued (403 for others of the account). Never shows
    the token's secret."""
    return await service.get_token(session, caller, clientId, tokenId)


@router.delete("/iam/clients/{clientId}/tokens/{tokenId}", summary="Delete an API token")
async def delete_api_token(
    clientId: ClientId, tokenId: TokenId, session: Session, actor: CurrentActor
) -> None:
    """The token stops authenticating at once; this cannot be undone. Members delete only
    the tokens they issued."""
    await service.delete_token(session, actor, clientId, tokenId)
