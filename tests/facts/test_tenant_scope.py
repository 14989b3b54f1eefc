"""Tenant scoping has one builder (auth/scoping.tenant_clause); the addendum list's
statements built with it keep the SQL their query plans were measured with."""

from __future__ import annotations

import pytest
from sqlalchemy import bindparam
from sqlalchemy.dialects import postgresql

from cloudadmin.auth.caller import Caller, CallerKind
from cloudadmin.auth.scoping import caller_scope, tenant_clause, visible_accounts
from cloudadmin.billing.addendums import filters
from cloudadmin.billing.addendums.counter_filters import CounterShape, counter_clauses
from cloudadmin.db.models import Client, User

CLIENTS_OF = (
    "(SELECT clients.id \nFROM clients \nWHERE clients.reseller_id = %(scope_account)s::INTEGER)"
)
# The scope conditions of the addendum list as they were before the builder was shared.
ADDENDUM_SCOPES = {
    filters.Scope.RESELLER: "addendums.reseller_id = %(scope_account)s::BIGINT OR "
    f"addendums.client_id IN {CLIENTS_OF}",
    filters.Scope.RESELLER_WALK: "addendums.reseller_id + %(reseller_id_1)s::BIGINT = "
    "%(scope_account)s::BIGINT OR addendums.client_id + "
    f"%(client_id_1)s::INTEGER IN {CLIENTS_OF}",
    filters.Scope.ACCOUNT: "addendums.client_id = %(scope_account)s::INTEGER OR "
    "addendums.payer_id = %(scope_account)s::BIGINT",
}


def sql(clause: object) -> str:
    return str(clause.compile(dialect=postgresql.dialect()))  # type: ignore[attr-defined]


def caller(kind: CallerKind) -> Caller:
    return Caller(
        user_id=5,
        user_email="u@example.com",
        superuser=kind == CallerKind.operator,
        group_ids=frozenset({1}),
        key_id=1,
        account_id=7,
        account_type="reseller" if kind == CallerKind.reseller else "common",
        account_reseller_id=None,
    )


class TestAddendumScope:
    @pytest.mark.parametrize("scope", list(ADDENDUM_SCOPES), ids=lambda s: s.value)
    def test_sql_is_unchanged(self, scope: filters.Scope) -> None:
        assert [sql(c) for c in filters._scope(scope)] == [ADDENDUM_SCOPES[scope]]

    def test_counter_rows_use_the_same_builder(self) -> None:
        (clause,) = counter_clauses(
            CounterShape("postgresql", filters.Counter.COUNTS, reseller_scope=True)
        )
        assert sql(clause) == (
            "addendum_counts.reseller_key = %(scope_account)s::BIGINT OR "
            f"addendum_counts.client_id IN {CLIENTS_OF}"
        )


class TestOneBuilder:
    def test_visible_accounts_is_the_tenant_clause(self) -> None:
        reseller = caller(CallerKind.reseller)
        assert sql(visible_accounts(reseller, User.client_id)) == sql(
            tenant_clause(7, [User.client_id], clients=User.client_id)
        )

    @pytest.mark.parametrize("kind", [CallerKind.client_admin, CallerKind.reseller])
    def test_without_clients_only_the_own_account(self, kind: CallerKind) -> None:
        assert sql(caller_scope(caller(kind), Client.reseller_id)) == sql(Client.reseller_id == 7)

    def test_operators_see_everything(self) -> None:
        assert sql(caller_scope(caller(CallerKind.operator), Client.id)) == "true"

    def test_a_bind_parameter_is_an_account_too(self) -> None:
        clause = tenant_clause(bindparam("scope_account"), [User.client_id])
        assert sql(clause) == "users.client_id = %(scope_account)s::INTEGER"
