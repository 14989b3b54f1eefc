"""The plan of a list request (service.plan, filters.FILTERS), in Python: which counter
counts it and how its page is read. The answers themselves are checked against the
reference in test_addendums_property.py."""

from __future__ import annotations

from typing import Any

from cloudadmin.auth.caller import Caller
from cloudadmin.billing.addendums import counting, filters, service
from cloudadmin.billing.addendums.filters import FILTERS, Counter, Part
from cloudadmin.billing.addendums.schemas import AddendumQuery
from cloudadmin.billing.addendums.tables import addendums
from tests.billing.helpers import caller

OPERATOR, RESELLER = caller(superuser=True), caller(account_type="reseller")


def plan(who: Caller, **query: Any) -> service.Plan:
    return service.plan(AddendumQuery.model_validate(query), who, "postgresql")


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


def test_index_ordered_pages():
    assert service._index_ordered(plan(OPERATOR, client_id=["7"]).where)
    assert service._index_ordered(plan(OPERATOR, status=["active"], product_id=["1"]).where)
    assert not service._index_ordered(plan(OPERATOR, status=["active"]).where)
    assert not service._index_ordered(plan(OPERATOR, client_id=["7", "8"]).where)
    assert not service._index_ordered(plan(OPERATOR, client_id=["7"], plan_id=["1"]).where)
    assert not service._index_ordered(plan(RESELLER, client_id=["7"]).where)


def test_counters():
    def counted_by(who: Caller, **query: Any) -> type:
        return type(plan(who, **query).count)

    assert counted_by(OPERATOR) is counting.FromTotals
    assert counted_by(OPERATOR, client_id=["7"], status=["active"]) is counting.FromCounts
    assert counted_by(OPERATOR, company_name="acme") is counting.FromCounts
    assert counted_by(RESELLER, company_name="acme") is counting.FromCounts
    assert counted_by(caller(), company_name="acme") is counting.FromRows
    assert counted_by(OPERATOR, company_name="acme", plan_id=["1"]) is counting.FromRows
    assert counted_by(OPERATOR, created_on="2025-01-01") is counting.FromDays
    assert counting.counter_for(plan(OPERATOR, status=["active"]).where, OPERATOR) is Counter.TOTALS
