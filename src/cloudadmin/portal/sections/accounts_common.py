"""What the Accounts section's pages share: the sellers to choose from, the account
statuses and products, the messages shown after a change, an account id from a path."""

from __future__ import annotations

from typing import get_args

from cloudadmin.errors import NotFound, PermissionDenied
from cloudadmin.iam.clients.products import ACCOUNT_PRODUCTS
from cloudadmin.iam.clients.schemas import AccountStatus
from cloudadmin.iam.sellers import service as sellers
from cloudadmin.iam.sellers.repository import SellerFilter
from cloudadmin.kit.ints import INT32_MAX
from cloudadmin.kit.pagination import Paging
from cloudadmin.portal.context import Portal

STATUSES: tuple[str, ...] = get_args(AccountStatus)
PRODUCTS: tuple[str, ...] = ACCOUNT_PRODUCTS
# At most this many sellers are offered in a choice.
MAX_SELLER_CHOICES = 500
NOTICES = {
    "created": "The account was created.",
    "saved": "The account was saved.",
    "deleted": "The account was deleted.",
    "preset-saved": "The preset was saved.",
    "preset-deleted": "The preset was deleted.",
}


def account_id(text: str) -> int:
    """An account id from a path; anything else is the 404 page, as an unknown id."""
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= INT32_MAX:
        raise NotFound()
    return int(text)


async def seller_options(portal: Portal) -> list[tuple[int, str]]:
    """The sellers the user sees (not deleted), by name: (id, "name (company)"). A user
    who may not list sellers gets none."""
    try:
        found = await sellers.list_sellers(
            portal.db,
            portal.caller,
            SellerFilter(deleted=False),
            Paging(limit=MAX_SELLER_CHOICES, offset=0),
            ["full_name"],
            portal.request.url,
        )
    except PermissionDenied:
        return []
    rows = found if isinstance(found, list) else found.results
    return [(s.id, f"{s.full_name} ({s.company})") for s in rows]
