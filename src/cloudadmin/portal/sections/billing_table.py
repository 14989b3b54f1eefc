"""The addendum browser's table: its column heads and its rows as HTML.

The rows are written here, not in a template: the list's page is the busiest page of
the portal, and a 25-row table through Jinja (a template expression, an escape and a
join per cell, a macro call per column head) was about half of the page's CPU, against
a target of the page costing at most 1.5 times the API call behind it (docs/portal.md,
"What a page costs"). Every text value is escaped here; numbers are formatted as
integers and instants come from the service's own timestamp projection, so neither can
carry markup. (``html.escape`` is the standard library's:
it escapes what markupsafe escapes, quotes included, in half the time.)

The table is ASCII: a text's other characters are written as character references
(``Stra&#223;e``), which a browser reads as the characters themselves. One character
past U+00FF (a Polish or Greek company name) would otherwise make Python hold the whole
page two bytes a character: every copy of it doubles, and encoding it as UTF-8 goes
character by character (a third of the rendering's instructions, counted with
cachegrind). An ASCII page is copied and encoded as bytes at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache
from html import escape
from typing import Any

from markupsafe import Markup

# The columns a head may order the list by: the ordering field, the head's text.
SORTABLE = {
    "id": "ID",
    "client_id": "Client",
    "product_name": "Product",
    "plan_name": "Plan",
    "active_range_start": "Active from",
    "active_range_end": "Active until",
    "created_at": "Created",
}
# Heads that order nothing, placed before the head of this field.
_PLAIN_BEFORE = "active_range_start"


# A page's texts repeat (its products, plans, statuses, currencies, a client's name on
# several rows): each escaped once in a while, not once a cell.
@lru_cache(maxsize=4096)
def text(value: str) -> str:
    """``value`` escaped, in ASCII: other characters as numeric character references."""
    escaped = escape(value)
    if escaped.isascii():
        return escaped
    return escaped.encode("ascii", "xmlcharrefreplace").decode("ascii")


def shown_instant(text: str | None) -> str:
    """An instant of the list ('2025-05-15T12:00:00Z') as the table shows it."""
    if not text:
        return ""
    return text.replace("T", " ").removesuffix("Z")


def _time(text: str) -> str:
    # An instant of the service's JSON, written by its own projection of a timestamp
    # column (digits, '-', ':', 'T', 'Z'): nothing in it to escape.
    return f'<time datetime="{text}">{shown_instant(text)}</time>'


def _sort_state(ordering: str, key: str) -> str:
    if ordering == key:
        return "ascending"
    if ordering == f"-{key}":
        return "descending"
    return "none"


_ARROWS = {"ascending": " &#9650;", "descending": " &#9660;", "none": ""}  # ▲ ▼


def heads(ordering: str, link: Callable[[str], str], active_at: bool) -> Markup:
    """The table's head cells; a sortable head links to the list ordered by its field
    (descending when it is ordered ascending now)."""
    cells = []
    for key, label in SORTABLE.items():
        if key == _PLAIN_BEFORE:
            cells.append('<th scope="col">Status</th>')
            if active_at:
                cells.append('<th scope="col">Status at that instant</th>')
            cells.append('<th scope="col">Currency</th>')
        state = _sort_state(ordering, key)
        target = escape(link(f"-{key}" if state == "ascending" else key))
        cells.append(
            f'<th scope="col" aria-sort="{state}"><a href="{target}">'
            f"{text(label)}{_ARROWS[state]}</a></th>"
        )
    return Markup("\n".join(cells))


def rows(items: Iterable[dict[str, Any]], active_at: bool) -> Markup:
    """One ``<tr>`` per addendum of the service's page (its JSON items)."""
    out = []
    for item in items:
        client_id = int(item["client_id"])
        product, active = item["product"], item["active_range"]
        company = item["client"]["company_name"] or str(client_id)
        end = active["end"]
        status_then = f"<td>{text(item.get('status_at_active_at') or '')}</td>" if active_at else ""
        out.append(
            f"<tr><td>{int(item['id'])}</td>"
            f'<td><a href="/portal/accounts/{client_id}" hx-boost="false">{text(company)}</a>'
            f' <span class="muted">#{client_id}</span></td>'
            f'<td>{text(product["name"])} <span class="muted">'
            f"{text(product['internal_name'])}</span></td>"
            f"<td>{text(item['plan']['name'])}</td>"
            f"<td>{text(item['status'])}</td>{status_then}"
            f"<td>{text(item['currency']['char_code'])}</td>"
            f"<td>{_time(active['start'])}</td>"
            f"<td>{_time(end) if end else 'never ends'}</td>"
            f"<td>{_time(item['created_at'])}</td></tr>"
        )
    return Markup("\n".join(out))
