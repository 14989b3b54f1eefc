"""A plain-Python model of operation 13, written from docs/billing.md, not from the code.

Rows are dicts with the column names of the addendum table; instants are aware UTC
datetimes. ``expected`` answers a list of (parameter, value) pairs the way the
documentation says the endpoint must: the count, and the ids of the page in order.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

PRODUCT_IDS = {
    "CDN": 1, "STORAGE": 2, "DDOS": 3, "STREAMING": 4, "CLOUD": 5, "CONNECT": 6,
    "WG_PRIVATE_CLOUD": 7, "P2P": 8, "INFRASTRUCTURE_PROTECTION": 9, "DNS": 10,
    "OTHER_SERVICES": 11, "PREMIUM_SUPPORT": 12, "CONNECTIVITY": 13, "GHOST": 14,
    "MANAGED_SERVICES": 15, "RENT": 16, "SOFTWARE_DEVELOPMENT": 17, "VMWARE": 18, "LAAS": 19,
    "AWS_CLOUD": 20, "FAST_EDGE": 21, "TECHNICAL_SUPPORT": 22, "WAAP": 23, "SHIELD_PROXY": 25,
    "AI_DEDCOMP": 32,
}  # fmt: skip
INFINITY = datetime.max.replace(tzinfo=UTC)


def caseless(text: str) -> str:
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", text).casefold())


def instant(text: str) -> datetime:
    if len(text) == 10:  # a bare date: its midnight UTC
        return datetime.fromisoformat(text).replace(tzinfo=UTC)
    return datetime.fromisoformat(text.replace("Z", "")).replace(tzinfo=UTC)


@dataclass(frozen=True)
class Viewer:
    kind: str  # operator, reseller, account
    account_id: int = 0


def visible(row: dict[str, Any], viewer: Viewer, client_reseller: dict[int, int | None]) -> bool:
    if viewer.kind == "operator":
        return True
    if viewer.kind == "reseller":
        return (
            row["reseller_id"] == viewer.account_id
            or client_reseller.get(row["client_id"]) == viewer.account_id
        )
    return viewer.account_id in (row["client_id"], row["payer_id"])


def is_active(row: dict[str, Any], t: datetime) -> bool:
    end = row["active_end"] or INFINITY
    return row["active_start"] <= t < end


def _matches(row: dict[str, Any], name: str, values: list[str], companies: dict[int, str]) -> bool:
    start, end = row["active_start"], row["active_end"]
    end_inf = end or INFINITY
    nonempty = start < end_inf
    t = (
        instant(values[-1])
        if name.startswith(("active_", "not_active_", "created_")) and name != "created_on"
        else INFINITY
    )  # the instant filters' value
    if name == "active_at":
        return is_active(row, t)
    if name == "not_active_at":
        return not is_active(row, t)
    if name == "active_after":  # some instant u > t with start <= u < end
        return nonempty and end_inf > t
    if name == "active_before":  # some instant u < t with start <= u < end
        return nonempty and start < t
    if name == "active_start_from":
        return start >= t
    if name == "active_start_to":
        return start <= t
    if name == "active_end_from":
        return end_inf >= t
    if name == "active_end_to":
        return end is not None and end <= t
    if name == "created_after":
        return row["created_at"] > t
    if name == "created_before":
        return row["created_at"] < t
    if name == "created_on":
        return row["created_at"].date() == date.fromisoformat(values[-1])
    if name == "id":
        return row["id"] == int(values[-1])
    if name in ("company_name", "plan_name", "product_name"):
        text = {
            "company_name": companies.get(row["client_id"], ""),
            "plan_name": row["plan_name"],
            "product_name": row["product_name"],
        }[name]
        return caseless(values[-1]) in caseless(text)
    column = {"addendum_id": "id"}.get(name, name)
    wanted: set[Any] = set()
    for v in values:
        if v == "null" and name in ("payer_id", "reseller_id"):
            wanted.add(None)
        elif name in ("currency_char_code", "status", "product_internal_name"):
            wanted.add(v)
        else:
            wanted.add(int(v))
    return row[column] in wanted


def _sort_key(field: str, companies: dict[int, str]):  # type: ignore[no-untyped-def]
    def key(row: dict[str, Any]) -> Any:
        if field == "active_range_start":
            return row["active_start"]
        if field == "active_range_end":
            return row["active_end"] or INFINITY
        if field in ("plan_name", "product_name"):
            return (caseless(row[field]), row[field])
        return row[field]

    return key


def expected(
    rows: list[dict[str, Any]],
    params: list[tuple[str, str]],
    viewer: Viewer,
    client_reseller: dict[int, int | None],
    companies: dict[int, str],
) -> tuple[int, list[int]]:
    by_name: dict[str, list[str]] = {}
    for name, value in params:
        by_name.setdefault(name, []).append(value)
    limit = int(by_name.pop("limit", ["25"])[-1])
    offset = int(by_name.pop("offset", ["0"])[-1])
    fields: list[tuple[str, bool]] = []
    for raw in by_name.pop("ordering", []):
        for part in raw.split(","):
            part = part.strip()
            if part:
                name = part.lstrip("-")
                if name not in [f for f, _ in fields]:
                    fields.append((name, part.startswith("-")))
    if "id" not in [f for f, _ in fields]:
        fields.append(("id", False))
    found = [
        r
        for r in rows
        if visible(r, viewer, client_reseller)
        and all(_matches(r, n, v, companies) for n, v in by_name.items())
    ]
    for name, descending in reversed(fields):  # stable sorts, last key first
        found.sort(key=_sort_key(name, companies), reverse=descending)
    return len(found), [r["id"] for r in found[offset : offset + limit]]


def status_at(row: dict[str, Any], t: datetime) -> str:
    if t < row["active_start"]:
        return "upcoming"
    if row["active_end"] is not None and t >= row["active_end"]:
        return "stopped"
    return "active" if row["status"] == "upcoming" else row["status"]


GRID_START = datetime(2025, 1, 1, tzinfo=UTC)


def grid(k: int) -> datetime:
    return GRID_START + timedelta(hours=6 * k)
