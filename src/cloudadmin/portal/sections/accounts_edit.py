"""One account (docs/portal.md, "Accounts"): its page (details, users, API tokens
without their secrets, a link to its addendums), its creation (the API's POST
/iam/users: a client account with its first user), its editing (PATCH
/iam/clients/{id}'s rules, and its product availability) and its deletion (DELETE
/iam/clients/{id}). A refused form is shown again with what was typed and each field's
message, and nothing is written (400)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fastapi import APIRouter
from starlette.responses import Response

from cloudadmin.errors import ApiError, PermissionDenied
from cloudadmin.iam.api_tokens import service as tokens
from cloudadmin.iam.api_tokens.repository import TokenFilter
from cloudadmin.iam.clients import availability, reads
from cloudadmin.iam.clients import service as clients
from cloudadmin.iam.clients.schemas import Client, ClientPatch
from cloudadmin.iam.sign_in.credentials import PortalKind
from cloudadmin.iam.users import service as users
from cloudadmin.iam.users.schemas import UserCreate
from cloudadmin.portal.context import PREFIX, AdminPage, Portal, PortalRoute, see_other
from cloudadmin.portal.forms import FORM, Form, errors_of, parse, read_form
from cloudadmin.portal.sections.accounts_common import (
    NOTICES,
    PRODUCTS,
    account_id,
    seller_options,
)
from cloudadmin.web.idempotency import KeyClaim

BASE = f"{PREFIX}/accounts"
router = APIRouter(prefix=BASE, route_class=PortalRoute, include_in_schema=False)

LANGS = [("en", "English"), ("de", "German"), ("ru", "Russian"), ("zh", "Chinese"), ("az", "Azeri")]
CREATE_FIELDS = (
    "email", "password", "company", "name", "phone", "lang", "custom_id", "country_code",
    "seller", "is_test", "reseller",
)  # fmt: skip
EDIT_FIELDS = ("email", "companyName", "custom_id", "name", "phone", "seller", "is_test")
AVAILABILITY = [("", "Reseller's default"), ("true", "Available"), ("false", "Not available")]
# Refusals a form shows as its messages; any other error is a page (404, 403).
FORM_STATUSES = (400, 409, 422)


def _product_field(product: str) -> str:
    return f"product_{product}"


def _wanted_availability(form: Form) -> dict[str, bool | None]:
    wanted: dict[str, bool | None] = {}
    for product in PRODUCTS:
        value = form.get(_product_field(product))
        if value not in ("", "true", "false"):
            form.errors.setdefault(_product_field(product), "Choose one of the choices.")
            continue
        wanted[product] = None if value == "" else value == "true"
    return wanted


def _settle(form: Form, known: Iterable[str]) -> None:
    """A message for a field the form does not show becomes the form's."""
    names = {*known, *(_product_field(p) for p in PRODUCTS), FORM}
    for name in [n for n in form.errors if n not in names]:
        message = form.errors.pop(name)
        form.errors[FORM] = f"{form.errors.get(FORM, '')} {name}: {message}".strip()


def _refuse(form: Form, error: ApiError) -> None:
    if error.status_code not in FORM_STATUSES:
        raise error
    form.refuse(errors_of(error))


# What every account form offers to choose from, whatever its account.
_CHOICES: dict[str, Any] = {
    "langs": LANGS,
    "products": PRODUCTS,
    "availability": AVAILABILITY,
    "product_field": _product_field,
}


async def _form_page(
    portal: Portal, title: str, template: str, form: Form, **values: Any
) -> Response:
    sellers = [("", "None")] + [(str(i), n) for i, n in await seller_options(portal)]
    chosen = form.get("seller")
    if chosen and chosen not in dict(sellers):  # kept, even when not offered
        sellers.append((chosen, f"Seller {chosen}"))
    return portal.page(
        title,
        template,
        status=400 if form.errors else 200,
        form=form,
        sellers=sellers,
        **_CHOICES,
        **values,
    )


@router.get("/new")
async def new_account_form(portal: AdminPage) -> Response:
    _changer(portal)
    form = Form(values={"lang": "en"})
    return await _form_page(portal, "New account", "accounts/new.html", form, operator=_op(portal))


def _op(portal: Portal) -> bool:
    return portal.user.kind is PortalKind.operator


def _changer(portal: Portal) -> Portal:
    """A seller changes nothing (docs/access.md): its forms are refused as the services
    would refuse what they send."""
    if portal.user.kind is PortalKind.seller:
        raise PermissionDenied()
    return portal


def _account_fields(form: Form) -> dict[str, Any]:
    """The fields the new account's form and the edit form share, as the API takes
    them (POST /iam/users, PATCH /iam/clients/{id})."""
    return {
        "email": form.get("email").strip(),
        "name": form.text_or_none("name"),
        "phone": form.text_or_none("phone"),
        "custom_id": form.text_or_none("custom_id"),
        "seller": form.text_or_none("seller"),
        "is_test": form.checked("is_test"),
    }


@router.post("/new")
async def create_account(portal: AdminPage) -> Response:
    """A client account with its first user, as POST /iam/users makes them."""
    _changer(portal)
    form = await read_form(portal.request)
    wanted = _wanted_availability(form)
    values: dict[str, Any] = {
        **_account_fields(form),
        "password": form.get("password"),
        "company": form.get("company"),
        "lang": form.get("lang") or "en",
        "country_code": form.text_or_none("country_code"),
        "services": [
            {"product_name": p, "available": v} for p, v in wanted.items() if v is not None
        ],
    }
    if _op(portal):
        values["reseller"] = form.text_or_none("reseller")
    body = parse(UserCreate, values, form)
    if body is not None:
        claim = KeyClaim(portal.request, portal.caller.account_id, None, "")
        try:
            created = await users.create(portal.db, portal.actor, body, claim)
        except ApiError as error:
            _refuse(form, error)
        else:
            return see_other(f"{BASE}/{created.client}?notice=created")
    form.values.pop("password", None)  # never shown again
    _settle(form, CREATE_FIELDS)
    return await _form_page(portal, "New account", "accounts/new.html", form, operator=_op(portal))


@router.get("/{client_id}")
async def account_page(client_id: str, portal: AdminPage) -> Response:
    """One account: its details, users and API tokens, and what may be done with it."""
    account = await reads.get(portal.db, portal.caller, account_id(client_id))
    found = await tokens.list_tokens(portal.db, portal.caller, account.id, TokenFilter())
    sellers = dict(await seller_options(portal))
    return portal.page(
        f"Account {account.id}",
        "accounts/account.html",
        account=account,
        tokens=found,
        seller_name=sellers.get(account.seller) if account.seller else None,
        notice=NOTICES.get(portal.request.query_params.get("notice", "")),
        billing_link=f"{PREFIX}/billing?client_id={account.id}",
    )


def _edit_values(account: Client, personal: dict[str, bool]) -> dict[str, str]:
    values = {
        "email": account.email,
        "companyName": account.companyName,
        "custom_id": account.custom_id or "",
        "name": account.name or "",
        "phone": account.phone or "",
        "seller": str(account.seller or ""),
    }
    if account.is_test:
        values["is_test"] = "true"
    for product in PRODUCTS:
        value = personal.get(product)
        values[_product_field(product)] = "" if value is None else str(value).lower()
    return values


async def _personal(portal: Portal, client_id: int) -> dict[str, bool]:
    return await availability.personal(portal.db, portal.caller, client_id)


@router.get("/{client_id}/edit")
async def edit_account_form(client_id: str, portal: AdminPage) -> Response:
    # Whether the account is visible first: another tenant's is the 404 page, for a
    # seller too; then a seller's change is refused.
    account = await reads.get(portal.db, portal.caller, account_id(client_id))
    _changer(portal)
    form = Form(values=_edit_values(account, await _personal(portal, account.id)))
    return await _form_page(
        portal, f"Edit account {account.id}", "accounts/edit.html", form, account=account
    )


def _changes(account: Client, form: Form) -> dict[str, Any]:
    """What the form changes, in PATCH's terms: only the fields whose value differs
    (so that a field the user may not change is sent only when changed)."""
    typed: dict[str, Any] = {**_account_fields(form), "companyName": form.get("companyName")}
    now = {
        "email": account.email,
        "companyName": account.companyName,
        "custom_id": account.custom_id,
        "name": account.name,
        "phone": account.phone,
        "seller": None if account.seller is None else str(account.seller),
        "is_test": account.is_test,
    }
    return {k: v for k, v in typed.items() if v != now[k]}


@router.post("/{client_id}/edit")
async def update_account(client_id: str, portal: AdminPage) -> Response:
    """The account's details (PATCH /iam/clients/{id}) and its product availability."""
    # Whether the account is visible first: another tenant's is the 404 page, for a
    # seller too; then a seller's change is refused.
    account = await reads.get(portal.db, portal.caller, account_id(client_id))
    _changer(portal)
    form = await read_form(portal.request)
    wanted = _wanted_availability(form)
    body = parse(ClientPatch, _changes(account, form), form)
    if body is not None:
        try:
            if body.model_fields_set:
                await clients.update(portal.db, portal.actor, account.id, body)
            personal = await _personal(portal, account.id)
            if any(personal.get(p) != v for p, v in wanted.items()):
                await availability.set_availability(portal.db, portal.actor, account.id, wanted)
        except ApiError as error:
            _refuse(form, error)
        else:
            return see_other(f"{BASE}/{account.id}?notice=saved")
    _settle(form, EDIT_FIELDS)
    return await _form_page(
        portal, f"Edit account {account.id}", "accounts/edit.html", form, account=account
    )


@router.get("/{client_id}/delete")
async def delete_account_form(client_id: str, portal: AdminPage) -> Response:
    # Whether the account is visible first: another tenant's is the 404 page, for a
    # seller too; then a seller's change is refused.
    account = await reads.get(portal.db, portal.caller, account_id(client_id))
    _changer(portal)
    return portal.page(f"Delete account {account.id}", "accounts/delete.html", account=account)


@router.post("/{client_id}/delete")
async def delete_account(client_id: str, portal: AdminPage) -> Response:
    """Requests the account's deletion, as DELETE /iam/clients/{id}."""
    account = await reads.get(portal.db, portal.caller, account_id(client_id))
    _changer(portal)
    await clients.request_deletion(portal.db, portal.actor, account.id)
    return see_other(f"{BASE}?notice=deleted")
