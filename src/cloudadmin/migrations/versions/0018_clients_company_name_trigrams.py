"""clients.company_name_folded: a trigram index for the addendum list's company search

``company_name`` of the addendum list matches clients whose folded company name
contains the folded value (docs/billing.md, "Names"): a ``LIKE '%…%'``, which a B-tree
cannot serve. On PostgreSQL a GIN index of the name's trigrams (extension pg_trgm,
shipped with PostgreSQL and trusted: a database owner may create it) finds them without
reading every client. SQLite has no such index: nothing to do there.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-23 19:30:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_INDEX = "ix_clients_company_name_folded_trigrams"


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    op.execute(f"CREATE INDEX {_INDEX} ON clients USING gin (company_name_folded gin_trgm_ops)")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(f"DROP INDEX IF EXISTS {_INDEX}")
    # The extension stays: something else may use it by now.
