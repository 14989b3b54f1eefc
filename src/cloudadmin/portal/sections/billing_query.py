"""The addendum browser's query string, read into the API's own query model
(``AddendumQuery``): every filter, its validation and its messages are the API's.

What the portal adds to the API's query string is only what an HTML form needs:

- an empty field is no filter (a form sends every field, filled or not; the API refuses
  an empty value);
- a field of numbers takes several separated by commas or spaces (``client_id=1, 2``
  is the API's ``client_id=1&client_id=2``); repeated parameters work too;
- ``page`` (1, 2, ...) is the offset of that page at the page's size.

The links of the page (ordering, pages, CSV, chart) carry the filters in the API's own
spelling, so each link is also what the API would be asked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from urllib.parse import urlencode

from starlette.datastructures import QueryParams

from cloudadmin.billing.addendums.schemas import DEFAULT_LIMIT, MAX_LIMIT, AddendumQuery
from cloudadmin.portal.forms import FORM, Form, parse, text_problem

PAGING = ("limit", "offset", "ordering")
PAGE = "page"
# Repeatable numbers: a form's field may hold several.
NUMBER_LISTS = frozenset(
    {
        "addendum_id",
        "client_id",
        "payer_id",
        "provider_id",
        "reseller_id",
        "plan_id",
        "product_id",
        "currency_id",
    }
)
# The query model's list fields (repeatable parameters; web/query_model.py reads them
# the same way: tests/portal/test_billing.py checks the two agree).
LISTS = NUMBER_LISTS | {"currency_char_code", "product_internal_name", "status", "ordering"}
FILTERS = tuple(name for name in AddendumQuery.model_fields if name not in PAGING)
_SEPARATORS = re.compile(r"[,\s]+")


@dataclass
class Browse:
    """A request of the browser: the form as typed, the API's query (None when it was
    refused: ``form.errors`` say why), and the filters in the API's spelling."""

    form: Form
    query: AddendumQuery | None
    filters: list[tuple[str, str]] = field(default_factory=list)
    ordering: str = ""
    limit: int = DEFAULT_LIMIT
    offset: int = 0

    def link(self, path: str, *, paging: bool = True, **changes: Any) -> str:
        """``path`` with the filters, then ordering, limit and offset (``changes``
        replace them; a value of None or "" leaves one out)."""
        values: dict[str, Any] = {"ordering": self.ordering}
        if paging:
            values |= {"limit": self.limit, "offset": self.offset}
            if values["limit"] == DEFAULT_LIMIT:
                values["limit"] = None
        values |= changes
        rest = urlencode([(k, str(v)) for k, v in values.items() if v not in (None, "", 0)])
        query = "&".join(part for part in (self.encoded_filters, rest) if part)
        return f"{path}?{query}" if query else path

    def ordered_link(self, path: str, field: str) -> str:
        """``link(path, offset=None, ordering=field)``, for a column head: an ordering
        field's name (letters, '_', a leading '-') needs no encoding, so nothing is
        encoded again for each of the table's heads."""
        limit = "" if self.limit == DEFAULT_LIMIT else f"&limit={self.limit}"
        query = "&".join(p for p in (self.encoded_filters, f"ordering={field}{limit}") if p)
        return f"{path}?{query}"

    @cached_property
    def encoded_filters(self) -> str:
        """The filters as a query string, encoded once for the dozen links of a page
        (read_browse has set them before any link is made)."""
        return urlencode(self.filters)

    @property
    def filtered(self) -> bool:
        return bool(self.filters)


def _values(params: QueryParams, name: str) -> list[str]:
    values = [v.strip() for v in params.getlist(name)]
    if name in NUMBER_LISTS:
        values = [piece for v in values for piece in _SEPARATORS.split(v)]
    return [v for v in values if v]


def read_browse(params: QueryParams) -> Browse:
    """The request's query string as the API's query model, and as a form to show."""
    form = Form()
    data: dict[str, Any] = {}
    browse = Browse(form, None)
    for name in dict.fromkeys(params.keys()):
        values = _values(params, name)
        if name == PAGE:
            continue
        if not values:
            continue
        problem = next((found for v in values if (found := text_problem(v))), None)
        if problem is not None:  # never reaches a statement
            form.errors.setdefault(name, problem)
            continue
        form.lists[name] = values
        form.values[name] = ", ".join(values) if name in NUMBER_LISTS else values[-1]
        data[name] = values if name in LISTS else values[-1]
        if name not in PAGING:
            kept = values if name in LISTS else values[-1:]
            browse.filters += [(name, v) for v in kept]
    if "ordering" in form.lists:
        browse.ordering = ",".join(form.lists["ordering"])
        form.values["ordering"] = browse.ordering
    page = _values(params, PAGE)
    query = parse(AddendumQuery, data, form)
    unknown = [name for name in form.errors if name not in AddendumQuery.model_fields]
    for name in unknown:
        if name != FORM:
            form.errors.pop(name)
            form.errors.setdefault(FORM, f"'{name}' is not a filter of the list.")
    if query is not None:
        browse.limit, browse.offset = query.limit, query.offset
        if page:
            number = page[-1]
            if not number.isdigit() or not 1 <= int(number) <= 10**12:
                form.errors[PAGE] = "A page number: 1 or more."
                query = None
            else:
                browse.offset = (int(number) - 1) * browse.limit
                query = query.model_copy(update={"offset": browse.offset})
    browse.query = query
    return browse


def limit_choices(current: int) -> list[tuple[int, str]]:
    sizes = sorted({25, 50, MAX_LIMIT, current})
    return [(size, f"{size} a page") for size in sizes if 1 <= size <= MAX_LIMIT]
