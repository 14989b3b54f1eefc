"""GET/POST /iam/v2/clients/{clientId}/tokens, GET/DELETE …/tokens/{tokenId}.

The provider's current paths of the same tokens (its SDK calls these): the v1 service
behind them, the v2 schema on the wire (schemas.ApiTokenV2)."""

from __future__ import annotations

from fastapi import APIRouter

from cloudadmin.iam.api_tokens import service
from cloudadmin.iam.api_tokens.endpoints import TokenId, TokenListFilter
from cloudadmin.iam.api_tokens.schemas import ApiTokenV2, ApiTokenV2Created, TokenCreate
from cloudadmin.iam.clients.endpoints import ClientId
from cloudadmin.web.deps import CurrentActor, CurrentCaller, Session
from cloudadmin.web.idempotency import SECRET_ANSWER, Idempotent
from cloudadmin.web.route import ApiRoute

router = APIRouter(route_class=ApiRoute, tags=["API Tokens"])

TOKENS = "/iam/v2/clients/{clientId}/tokens"


@router.get(TOKENS, summary="List the API tokens of an account (v2)")
async def list_api_tokens_v2(
    clientId: ClientId, session: Session, caller: CurrentCaller, flt: TokenListFilter
) -> list[ApiTokenV2]:
    """As `GET /iam/clients/{clientId}/tokens`, in the v2 schema: `last_usage` is the
    issue time until the token is first used, `name` is `""` for a key made without one."""
    return [ApiTokenV2.of(t) for t in await service.list_tokens(session, caller, clientId, flt)]


@router.post(TOKENS, summary="Issue an API token (v2)", dependencies=[SECRET_ANSWER])
async def create_api_token_v2(
    clientId: ClientId,
    body: TokenCreate,
    session: Session,
    actor: CurrentActor,
    idempotency: Idempotent,
) -> ApiTokenV2Created:
    """As `POST /iam/clients/{clientId}/tokens` (the same rules, the same
    `Idempotency-Key`), in the v2 schema. The answer's `token` (`<id>_<secret>`) is shown
    once."""
    created = await service.create_token(session, actor, clientId, body, idempotency)
    return ApiTokenV2Created.of_created(created)


@router.get(TOKENS + "/{tokenId}", summary="Read an API token (v2)")
async def get_api_token_v2(
    clientId: ClientId, tokenId: TokenId, session: Session, caller: CurrentCaller
) -> ApiTokenV2:
    """As `GET /iam/clients/{clientId}/tokens/{tokenId}`, in the v2 schema."""
    return ApiTokenV2.of(await service.get_token(session, caller, clientId, tokenId))


@router.delete(TOKENS + "/{tokenId}", summary="Delete an API token (v2)")
async def delete_api_token_v2(
    clientId: ClientId, tokenId: TokenId, session: Session, actor: CurrentActor
) -> None:
    """As `DELETE /iam/clients/{clientId}/tokens/{tokenId}`: the token stops
    authenticating at once."""
    await service.delete_token(session, actor, clientId, tokenId)
