"""page_links: the next and previous links, exactly as Starlette's URL methods write
them (the implementation parses the query once for both links instead)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from starlette.datastructures import URL

from cloudadmin.kit.pagination import page_links


def starlette_links(url: URL, count: int, limit: int, offset: int) -> tuple[str | None, str | None]:
    """The links as Starlette's include/remove_query_params make them."""
    nxt = None
    if offset + limit < count:
        nxt = str(url.include_query_params(limit=limit, offset=offset + limit))
    prev = None
    if offset > 0:
        back = max(offset - limit, 0)
        if back == 0:
            prev = str(url.include_query_params(limit=limit).remove_query_params("offset"))
        else:
            prev = str(url.include_query_params(limit=limit, offset=back))
    return nxt, prev


names = st.sampled_from(["limit", "offset", "client_id", "ordering", "a b", "é", "x&y", ""])
# None: a bare name (``?a&b=1``).
values = st.none() | st.text(alphabet="ab 1=&%+é/?", max_size=6)
queries = st.lists(st.tuples(names, values), max_size=6).map(
    lambda pairs: "&".join(n if v is None else f"{n}={v}" for n, v in pairs)
)


class TestPageLinks:
    def test_links_keep_the_other_parameters_in_their_order(self) -> None:
        url = URL("http://h/billing/org/v1/addendums?client_id=7&limit=5&ordering=-id&offset=10")
        assert page_links(url, count=100, limit=5, offset=10) == (
            "http://h/billing/org/v1/addendums?client_id=7&ordering=-id&limit=5&offset=15",
            "http://h/billing/org/v1/addendums?client_id=7&ordering=-id&limit=5&offset=5",
        )

    def test_previous_page_at_the_start_has_no_offset(self) -> None:
        url = URL("http://h/l?offset=3&limit=5")
        assert page_links(url, count=5, limit=5, offset=3) == (None, "http://h/l?limit=5")

    def test_a_whole_list_has_no_links(self) -> None:
        assert page_links(URL("http://h/l"), count=3, limit=5, offset=0) == (None, None)

    @given(
        query=queries,
        count=st.integers(0, 50),
        limit=st.integers(1, 20),
        offset=st.integers(0, 60),
    )
    def test_same_links_as_starlette(self, query: str, count: int, limit: int, offset: int) -> None:
        url = URL(f"http://127.0.0.1:8000/billing/org/v1/addendums?{query}")
        assert page_links(url, count=count, limit=limit, offset=offset) == starlette_links(
            url, count, limit, offset
        )
