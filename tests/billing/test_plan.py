"""The plan of a list request (plan.py), a pure function: which counter counts it,
whether the count rides along with the page, and how the page is read once the count
is known. Only its public answers are asserted; the answers of the list themselves
are checked against the reference in test_addendums_property.py."""

from __future__ import annotations

from typing import Any

from cloudadmin.auth.caller import Caller
from cloudadmin.billing.addendums import counting, filters, ordering
from cloudadmin.billing.addendums import plan as planning
from cloudadmin.billing.addendums.counting import Counted
from cloudadmin.billing.addendums.filters import FILTERS, Counter, Part, Scope
from cloudadmin.billing.addendums.schemas import AddendumQuery
from cloudadmin.billing.addendums.tables import addendums
from tests.billing.helpers import caller

OPERATOR, RESELLER = caller(superuser=True), caller(account_type="reseller")


def plan(who: Caller, **query: Any) -> planning.Plan:
    return planning.plan(AddendumQuery.model_validate(query), who, "postgresql")


def test_every_id_ordered_index_exists():
    names = {index.name for index in addendums.indexes}
    assert {s.id_ordered_index for s in FILTERS if s.id_ordered_index} <= names
    ordered = filters.ID_ORDERED
    assert ordered == {frozenset({"client_id"}), frozenset({"product_id", "status"})}


def test_a_single_value_is_an_equality_a_list_is_not():
    one = plan(OPERATOR, client_id=["7"]).where
    assert one.shape.parts == (Part("client_id", one=True),) and one.params["client_id"] == 7
    two = plan(OPERATOR, client_id=["7", "8"]).where
    assert two.shape.parts == (Part("client_id"),) and two.params["client_id"] == [7, 8]
    null = plan(OPERATOR, payer_id=["null"]).where
    assert null.shape.parts == (Part("payer_id", values=False, null=True),)


def test_a_page_one_index_gives_in_id_order_never_depends_on_the_count():
    """One index gives exactly the matches in id order: the page does not depend on the
    count, so a count of the counts' rows is read with it in one statement (a sum of
    the totals is not: it runs first)."""
    for query in ({"client_id": ["7"]}, {"status": ["active"], "product_id": ["1"]}):
        how = plan(OPERATOR, **query)
        assert not how.needs_count, query
        assert planning.page_read(how, Counted(10**6)) == how.read
    assert plan(OPERATOR, client_id=["7"]).together
    assert not plan(OPERATOR, status=["active"], product_id=["1"]).together
    for who, query in (
        (OPERATOR, {"status": ["active"]}),
        (OPERATOR, {"client_id": ["7", "8"]}),
        (OPERATOR, {"client_id": ["7"], "plan_id": ["1"]}),
        (RESELLER, {"client_id": ["7"]}),
    ):
        assert plan(who, **query).needs_count, query


def test_another_order_never_depends_on_the_count():
    how = plan(OPERATOR, ordering=["-created_at"], plan_name="basic")
    assert not how.needs_count and how.together
    assert planning.page_read(how, Counted(10**6)) == how.read


def test_few_matches_are_sorted_many_are_walked():
    how = plan(OPERATOR, plan_name="basic")
    few = planning.page_read(how, Counted(planning.SORT_AT_MOST))
    assert few is not None and few.order == ordering.by_id_expression(False)
    many = planning.page_read(how, Counted(planning.SORT_AT_MOST + 1))
    assert many == how.read


def test_a_creation_range_walks_between_its_ids():
    how = plan(OPERATOR, created_on="2025-01-01")
    read = planning.page_read(how, Counted(100_000, ids=(1_000, 101_000)))
    assert read is not None and read.where.shape.id_range
    assert (read.where.params["id_low"], read.where.params["id_high"]) == (1_000, 101_000)


def test_a_company_search_reads_the_clients_it_named():
    how = plan(OPERATOR, company_name="acme")
    read = planning.page_read(how, counting.naming(30_000, [7]))
    assert read is not None and read.where.shape.names == {"client_id"}
    assert read.where.params["client_id"] == 7
    many = counting.naming(30_000, list(range(counting.NAMED_AT_MOST + 1)))
    assert many.named_clients is None


def test_a_resellers_large_share_asks_for_the_tables_size():
    how = plan(RESELLER)
    counted = Counted(planning.SORT_AT_MOST + 1)
    assert planning.page_read(how, counted) is None  # it depends on the table's size
    walked = planning.page_read(how, counted, table_rows=planning.SORT_AT_MOST + 2)
    assert walked is not None and walked.where.shape.scope is Scope.RESELLER_WALK
    small_share = planning.page_read(how, counted, table_rows=10**9)
    assert small_share is not None and small_share.where.shape.scope is Scope.RESELLER


def test_counters():
    def counted_by(who: Caller, **query: Any) -> Counter | None:
        how = plan(who, **query).count
        if isinstance(how, counting.FromCounters):
            return how.shape.table
        return Counter.DAYS if isinstance(how, counting.FromDays) else None

    assert counted_by(OPERATOR) is Counter.TOTALS
    assert counted_by(OPERATOR, status=["active"]) is Counter.TOTALS
    assert counted_by(OPERATOR, client_id=["7"], status=["active"]) is Counter.COUNTS
    assert counted_by(OPERATOR, company_name="acme") is Counter.COUNTS
    assert counted_by(RESELLER, company_name="acme") is Counter.COUNTS
    assert counted_by(caller(), company_name="acme") is None
    assert counted_by(OPERATOR, company_name="acme", plan_id=["1"]) is None
    assert counted_by(OPERATOR, created_on="2025-01-01") is Counter.DAYS


def test_the_counter_filters_follow_the_specs():
    """Two filters of one counter column match the values both allow; a reseller of
    none is the counters' key -1."""
    how = plan(
        RESELLER,
        product_id=["1", "2"],
        product_internal_name=["STORAGE", "DNS"],
        reseller_id=["null"],
    ).count
    assert isinstance(how, counting.FromCounters)
    assert how.shape.columns == ("product_id", "reseller_key")
    assert how.params["reseller_key"] == [-1]
    assert how.params["product_id"] == [2]
    assert how.params["scope_account"] == RESELLER.account_id
