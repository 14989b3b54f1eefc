"""The Users section (docs/portal.md, "Users"): every user the signed-in operator or
reseller sees, searched by e-mail, name and account, and one user's name, language and
group edited; the sellers' tab is users_sellers.py (portal/routes.py puts its routes
before these: /users/sellers is not a user's id).

The edit calls the API's own services: PATCH /iam/users/{userId} for the name and the
language, PUT /iam/clients/{clientId}/client-users/{userId} for the group, with their
rules (docs/access.md, "Changing users"): another tenant's user is the 404 page, an
operator's user is refused to a reseller (403), one's own group cannot be changed.
"""

from __future__ import annotations

from typing import Any, get_args

from fastapi import APIRouter, Depends
from starlette.responses import Response

from cloudadmin.db.models import GROUPS
from cloudadmin.errors import ApiError, NotFound
from cloudadmin.iam.client_users import manage as client_users
from cloudadmin.iam.client_users.schemas import UserGroupChange
from cloudadmin.iam.clients.schemas import Lang
from cloudadmin.iam.sign_in.credentials import PortalKind
from cloudadmin.iam.users import manage as users
from cloudadmin.iam.users.repository import UserSearch
from cloudadmin.iam.users.schemas import User, UserPatch
from cloudadmin.kit.ints import INT32_MAX
from cloudadmin.portal.context import PREFIX, Portal, PortalRoute, only, see_other
from cloudadmin.portal.forms import FORM, Form, errors_of, parse, query_form, read_form
from cloudadmin.portal.sections.searched_pages import searched_page

BASE = f"{PREFIX}/users"
MAX_SEARCH = 254
# Operators and resellers; a seller (or anyone else) gets the 404 page.
UsersPage = Depends(only(PortalKind.operator, PortalKind.reseller))
LANGUAGES = [(code, code) for code in get_args(Lang)]
GROUP_CHOICES = [(str(gid), name) for gid, name in GROUPS.items()]
NOTICES = {"saved": "The user was saved."}

router = APIRouter(prefix=BASE, route_class=PortalRoute, include_in_schema=False)


def _query_form(portal: Portal) -> Form:
    """The list's query string as a form: what was typed, kept for the redisplay."""
    return query_form(portal.request, max_chars=MAX_SEARCH)


def _page_number(form: Form) -> int:
    raw = form.get("page").strip()
    if not raw:
        return 1
    if not raw.isdigit() or not 1 <= int(raw) <= 1_000_000:
        form.errors[FORM] = "A page number from 1."
        return 1
    return int(raw)


@router.get("")
async def users_index(portal: Portal = UsersPage) -> Response:
    """The users the signed-in person sees, searched, a page at a time."""
    form = _query_form(portal)
    search = UserSearch(
        email=form.text_or_none("email"),
        name=form.text_or_none("name"),
        account=form.text_or_none("account"),
    )
    filters = {k: form.get(k).strip() for k in ("email", "name", "account") if form.get(k).strip()}
    number = _page_number(form)
    values: dict[str, Any] = {"form": form, "filters": filters, "found": None}
    if form.errors:
        return portal.page_or_part(
            "Users", "users/list.html", "users/results.html", status=400, **values
        )
    values.update(
        await searched_page(
            BASE,
            filters,
            number,
            lambda paging: users.search(portal.db, portal.caller, search, paging),
        ),
        groups=GROUPS,
    )
    return portal.page_or_part("Users", "users/list.html", "users/results.html", **values)


def _edit_form(user: User) -> Form:
    roles = user.client_and_roles[0].user_roles if user.client_and_roles else []
    return Form(
        values={"name": user.name or "", "lang": user.lang, "group": roles[0] if roles else ""}
    )


def _edit_page(portal: Portal, user: User, form: Form, *, status: int = 200) -> Response:
    notice = NOTICES.get(portal.request.query_params.get("notice", ""))
    return portal.page(
        f"User {user.email}",
        "users/edit.html",
        status=status,
        target=user,
        form=form,
        languages=LANGUAGES,
        groups=GROUP_CHOICES,
        itself=user.id == portal.user.user_id,
        notice=notice if status == 200 else None,
    )


def _user_id(user_id: int) -> int:
    """An id no row can have is not found, as one of another tenant."""
    if not 1 <= user_id <= INT32_MAX:
        raise NotFound()
    return user_id


@router.get("/{user_id}")
async def user_page(user_id: int, portal: Portal = UsersPage) -> Response:
    """One user: its name, language and group, as a form."""
    user = await users.get(portal.db, portal.caller, _user_id(user_id))
    return _edit_page(portal, user, _edit_form(user))


@router.post("/{user_id}")
async def update_user(user_id: int, portal: Portal = UsersPage) -> Response:
    """Saves the name and the language (the API's PATCH of the user) and the group (the
    API's PUT of the client user), in one transaction: a refusal of either writes
    nothing and shows the form again."""
    user = await users.get(portal.db, portal.caller, _user_id(user_id))
    form = await read_form(portal.request)
    patch = parse(
        UserPatch, {"name": form.get("name").strip() or None, "lang": form.get("lang")}, form
    )
    group = form.get("group")
    current = _edit_form(user).get("group")
    if group != current and (not group.isdigit() or int(group) not in GROUPS):
        form.errors.setdefault("group", "Choose one of the groups.")
    if patch is None or form.errors:
        return _edit_page(portal, user, form, status=400)
    try:
        await users.update(portal.db, portal.actor, user.id, patch)
        if group != current:
            change = UserGroupChange.model_validate(
                {"user_role": {"id": int(group), "name": GROUPS[int(group)]}}
            )
            await client_users.change_group(portal.db, portal.actor, user.client, user.id, change)
    except ApiError as refused:
        if refused.status_code in (403, 404):
            raise
        form.refuse(errors_of(refused))
        return _edit_page(portal, user, form, status=400)
    return see_other(f"{BASE}/{user.id}?notice=saved")
