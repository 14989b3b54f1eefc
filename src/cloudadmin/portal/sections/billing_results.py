"""The addendum browser's results: the part htmx swaps in (``#billing-results``), the
count, the table and the pager, written here as the table's rows are (billing_table.py)
rather than through a template.

The list's first page is the portal's busiest page, held to at most 1.5 times the cost
of the API call behind it (docs/portal.md, "What a page costs"), and a template's render
is a context, a generator and an escape per expression made again on every request.
Every value is escaped here (markupsafe's ``escape``, as a template escapes it); the
counts are integers formatted here.
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup, escape

from cloudadmin.portal.context import PREFIX
from cloudadmin.portal.sections.billing_query import Browse

BASE = f"{PREFIX}/billing"  # the section's address (billing.py takes it from here)


def _link(href: str, text: str, rel: str = "") -> str:
    """A pager's link, or its text marked disabled when there is no such page."""
    if not href:
        return f'<span aria-disabled="true">{text}</span>'
    rel_part = f' rel="{rel}"' if rel else ""
    return f'<a href="{escape(href)}"{rel_part}>{text}</a>'


def _jump(pages: int, page: int, fields: list[tuple[str, str]]) -> str:
    """The form that goes to a page by its number (with the list's filters and order)."""
    hidden = "".join(
        f'<input type="hidden" name="{escape(name)}" value="{escape(value)}">\n'
        for name, value in fields
    )
    return (
        f'<form method="get" action="{BASE}" class="jump">\n{hidden}'
        '<div class="field">\n'
        f'<label for="f-page">Go to page (1 to {pages:,})</label>\n'
        f'<input id="f-page" name="page" type="number" value="{page}">\n'
        "</div>\n"
        '<button type="submit">Go</button>\n'
        "</form>\n"
    )


def _table(values: dict[str, Any]) -> str:
    pages: int = values["pages"]
    pager = "\n".join(
        (
            _link(values["first"], "First"),
            _link(values["previous"], "Previous", "prev"),
            _link(values["next"], "Next", "next"),
            _link(values["last"], "Last"),
        )
    )
    jump = _jump(pages, values["page"], values["jump_fields"]) if pages > 2 else ""
    return (
        '<div class="table-wrap">\n<table class="addendums">\n'
        "<caption>Addendums matching the filters (times in UTC)</caption>\n"
        f"<thead><tr>\n{values['heads']}\n</tr></thead>\n"
        f"<tbody>\n{values['rows']}\n</tbody>\n"
        "</table>\n</div>\n"
        '<div class="pages">\n<nav class="pager" aria-label="Pages of addendums">\n'
        f"{pager}\n</nav>\n{jump}</div>\n"
    )


def _found(browse: Browse, values: dict[str, Any]) -> str:
    count: int = values["count"]
    pages: int = values["pages"]
    where = f", page {values['page']:,} of {pages:,}" if count else ""
    text = (
        f'<p class="count" role="status">{count:,} addendum{"" if count == 1 else "s"}'
        f"{where}.\n"
        f'<a href="{escape(values["csv_link"])}" hx-boost="false" download>Download CSV</a>\n'
        f'<a href="{escape(values["chart_link"])}" hx-boost="false">'
        "Chart of these addendums</a></p>\n"
    )
    if values["rows"]:
        return text + _table(values)
    if count:
        first = escape(browse.link(BASE, offset=None))
        return text + (
            f"<p>No addendum on this page: the list has {pages:,} "
            f'page{"" if pages == 1 else "s"}. <a href="{first}">To the first page</a></p>\n'
        )
    return text + "<p>No addendum matches the filters.</p>\n"


def results(values: dict[str, Any]) -> Markup:
    """The results part for the page's values (billing.py ``_page_values``)."""
    browse: Browse = values["browse"]
    if values["found"] is None:
        inner = '<p role="status">Correct the filters to see the addendums.</p>\n'
    else:
        inner = _found(browse, values)
    return Markup(
        '<div id="billing-results" class="results" hx-boost="true" '
        'hx-target="#billing-results" hx-swap="outerHTML">\n'
        # The list's ordering, sent with the filter form (outside this part) when applied.
        f'<input type="hidden" name="ordering" value="{escape(browse.ordering)}" '
        'form="billing-filters">\n'
        f"{inner}</div>"
    )
