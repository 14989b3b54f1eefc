"""Wire shapes of sellers (operations 4-6) and of their list."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, EmailStr, Field, StringConstraints

from cloudadmin.kit.body import LenientBody
from cloudadmin.kit.ints import Id32
from cloudadmin.kit.omit import omitted
from cloudadmin.kit.page_model import LinkedPage

SellerEmail = Annotated[EmailStr, Field(max_length=150)]
FullName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=255)]
Phone = Annotated[str, Field(max_length=30, pattern=r"^[a-z0-9+\-()#, *]*$")]


class SellerWrite(LenientBody):
    """Body of POST and PATCH: email and full_name required, phone optional."""

    email: SellerEmail
    full_name: FullName
    phone: Phone | None = None
    reseller: Id32 | None = Field(
        default=None,
        description="Operators only: the reseller account that owns a new seller "
        "(defaults to the operator's own account when that is a reseller).",
    )


class Seller(BaseModel):
    id: int
    email: str = Field(max_length=150)
    full_name: str = Field(max_length=255)
    reseller_name: str
    company: str
    date_joined: str = Field(description="Registration instant, RFC 3339 UTC.")
    activated: bool
    deleted: bool
    phone: str | None = omitted(max_length=30)


class SellerPage(LinkedPage):
    """The provider's SellersPaginatedArray, answered when `limit` is given."""

    results: list[Seller]
