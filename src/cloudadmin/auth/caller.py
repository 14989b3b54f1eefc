"""Who is calling: the user behind an API key, its account and its role.

Plain values only, no ORM objects: the caller outlives the request's transaction
(the activity log is written after a rollback).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum, auto

from cloudadmin.db.models.accounts import ADMINISTRATORS


class CallerKind(StrEnum):
    # auto(): each value is its name.
    operator = auto()
    reseller = auto()
    client_admin = auto()
    member = auto()
    # A reseller's sales person signed in to the Admin Portal (never an API key): sees
    # the clients assigned to it and changes nothing (docs/access.md, "The Admin Portal:
    # sellers").
    seller = auto()


@dataclass(frozen=True, slots=True)
class Caller:
    user_id: int
    user_email: str
    superuser: bool
    group_ids: frozenset[int]
    # The API key of the request; None for a console's signed-in session (the portal).
    key_id: int | None
    account_id: int
    account_type: str
    account_reseller_id: int | None
    # When the API key of this request expires (None: never). A token it issues may not
    # outlive it (iam/api_tokens).
    key_expires_at: datetime | None = None
    # A seller signed in to the portal (db/models/sellers.py): its account is its
    # reseller's, ``user_id`` 0 (a seller is not a user) and ``user_email`` its own.
    seller_id: int | None = None

    @property
    def kind(self) -> CallerKind:
        if self.superuser:
            return CallerKind.operator
        if self.seller_id is not None:
            return CallerKind.seller
        if self.account_type == "reseller":
            return CallerKind.reseller
        if ADMINISTRATORS in self.group_ids:
            return CallerKind.client_admin
        return CallerKind.member

    @property
    def is_operator(self) -> bool:
        return self.superuser

    @property
    def is_reseller(self) -> bool:
        return self.kind is CallerKind.reseller

    @property
    def is_member(self) -> bool:
        """A client member, or a seller: every check that refuses a member a change
        refuses a seller too."""
        return self.kind in (CallerKind.member, CallerKind.seller)

    @property
    def is_seller(self) -> bool:
        return self.kind is CallerKind.seller


@dataclass(frozen=True, slots=True)
class Actor:
    """The caller plus what the request says about where it came from."""

    caller: Caller
    source_ip: str
    user_agent: str
    request_id: str
