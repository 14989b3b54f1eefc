"""Wire shapes of an API token, as the provider's iam_api.yaml documents them
(schemas-Token, TokenResponse, CreateTokenResponse)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, Field, StringConstraints

from cloudadmin.kit.body import LenientBody
from cloudadmin.kit.ints import Int32
from cloudadmin.kit.omit import omitted
from cloudadmin.kit.timeparse import parse_instant

GroupName = Literal[
    "Users",
    "Administrators",
    "Engineers",
    "Purge and Prefetch only (API)",
    "Purge and Prefetch only (API+Web)",
]


def _instant(value: object) -> object:
    return parse_instant(value) if isinstance(value, str) else value


Instant = Annotated[datetime, BeforeValidator(_instant)]


class RoleIn(LenientBody):
    """The provider's Group: the id, the name, or both (which must agree)."""

    id: Int32 | None = Field(default=None, description="Group id: 1, 2, 5, 3009 or 3022.")
    name: str | None = Field(default=None, max_length=100, description="Group name.")


class ClientUserIn(LenientBody):
    role: RoleIn | None = Field(
        default=None,
        description="The token's role; without it, the issuer's own "
        "(Administrators for an administrator).",
    )


class TokenCreate(LenientBody):
    name: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=255)] = (
        Field(description="API token name.")
    )
    description: Annotated[str, StringConstraints(max_length=255)] | None = Field(
        default=None, description="API token description."
    )
    exp_date: Instant | None = Field(
        description="When the token expires (RFC 3339, UTC); null: never. Must be in the "
        "future, and not later than the token sending the request expires, if it does (a "
        "token never makes one that outlives it: 400)."
    )
    client_user: ClientUserIn = Field(description="The token's role.")


class Role(BaseModel):
    id: int = Field(description="Group id.")
    name: GroupName = Field(description="Group name.")


class _Issuer(BaseModel):
    """What v1's and v2's ClientUser both say of a token's issuer (each adds its role)."""

    deleted: bool = Field(description="Deletion flag of the token.")
    user_id: int = Field(description="The user who issued the token (and whom it acts as).")
    user_name: str = Field(description="The issuer's name (its e-mail when it has none).")
    user_email: str = Field(description="The issuer's e-mail address.")
    client_id: int = Field(description="The account.")


class TokenIssuer(_Issuer):
    """The provider's ClientUser: the token's role and issuer."""

    role: Role | None = omitted(
        "The token's role. A key made without one (the CLI's `apikey create`) acts with "
        "every group of its user and shows the highest; absent if the user has none."
    )


class _Token(BaseModel):
    """What v1's and v2's token both say alike; each declares its name, issuer and last
    use (a field declared again keeps its place in the schema)."""

    id: int = Field(description="API token id (the part before `_` of the token).")
    name: str | None = omitted("API token name.")
    description: str | None = omitted("API token description.")
    exp_date: str | None = Field(description="When the token expires (RFC 3339, UTC); null: never.")
    deleted: bool = Field(description="True once the token was deleted.")
    expired: bool = Field(description="True once exp_date has passed.")
    created: str = Field(description="When the token was issued (RFC 3339, UTC).")


class ApiToken(_Token):
    client_user: TokenIssuer
    last_usage: str | None = omitted(
        "When the token last authenticated a request (RFC 3339, UTC), to the minute: "
        "absent until it is first used."
    )


class ApiTokenCreated(ApiToken):
    token: str = Field(
        description="The token to send as `Authorization: APIKey <token>`. "
        "Shown only in this answer: only a hash of its secret is stored."
    )


# --- /iam/v2/clients/{clientId}/tokens ------------------------------------------------
# The same tokens, as the provider's current document types them for v2: every field it
# requires is always present (its SDK validates strictly), so what v1 leaves out has a
# value here.


class RoleV2(BaseModel):
    """The provider's Group, whose members are both optional: `{}` for a key that acts
    with no group."""

    id: int | None = omitted("Group id.")
    name: GroupName | None = omitted("Group name.")


class TokenIssuerV2(_Issuer):
    role: RoleV2 = Field(
        description="The token's role. A key made without one (the CLI's `apikey create`) "
        "acts with every group of its user and shows the highest; `{}` if the user has none."
    )


class ApiTokenV2(_Token):
    name: str = Field(description="API token name (empty for a CLI key made without one).")
    client_user: TokenIssuerV2
    last_usage: str = Field(
        description="When the token last authenticated a request (RFC 3339, UTC), to the "
        "minute; until it is first used, when it was issued."
    )

    @classmethod
    def of(cls, token: ApiToken) -> ApiTokenV2:
        """The v1 answer of the same token, in the v2 schema."""
        issuer = token.client_user
        role = issuer.role
        return cls(
            id=token.id,
            name=token.name or "",
            description=token.description,
            exp_date=token.exp_date,
            deleted=token.deleted,
            expired=token.expired,
            created=token.created,
            client_user=TokenIssuerV2(
                **issuer.model_dump(include=set(_Issuer.model_fields)),
                role=RoleV2(id=role.id, name=role.name) if role else RoleV2(),
            ),
            last_usage=token.last_usage or token.created,
        )


class ApiTokenV2Created(ApiTokenV2):
    token: str = Field(
        description="The token to send as `Authorization: APIKey <token>`, `<id>_<secret>`. "
        "Shown only in this answer: only a hash of its secret is stored."
    )

    @classmethod
    def of_created(cls, created: ApiTokenCreated) -> ApiTokenV2Created:
        return cls(**ApiTokenV2.of(created).model_dump(), token=created.token)
