"""clients.company_name_folded: the company name as compared for uniqueness

Company names are unique among live accounts ignoring letter case. Neither database
folds case the same way (SQLite's lower() knows ASCII only), so the folded form is
computed in Python on every write, by the API and the importer alike, and compared
here (docs/iam.md).

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-23 16:50:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A plain ADD COLUMN (batch mode would rebuild `clients`, which the foreign keys of
    # stored rows refuse on SQLite): NOT NULL needs a constant default there; every row
    # is then given its folded name. PostgreSQL drops the default again; on SQLite it
    # stays (removing it means a rebuild) and is never used: every writer sets the column.
    op.add_column(
        "clients",
        sa.Column("company_name_folded", sa.Text(), server_default="", nullable=False),
    )
    _fold_existing_rows()
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column("clients", "company_name_folded", server_default=None)
    op.create_index(
        op.f("ix_clients_company_name_folded"), "clients", ["company_name_folded"], unique=False
    )


def _fold_existing_rows() -> None:
    import unicodedata

    def fold(text: str) -> str:  # frozen copy of the application's caseless fold
        return unicodedata.normalize("NFC", unicodedata.normalize("NFD", text).casefold())

    bind = op.get_bind()
    rows = bind.execute(sa.text("SELECT id, company_name FROM clients")).all()
    if rows:
        bind.execute(
            sa.text("UPDATE clients SET company_name_folded = :folded WHERE id = :id"),
            [{"id": r[0], "folded": fold(r[1])} for r in rows],
        )


def downgrade() -> None:
    op.drop_index(op.f("ix_clients_company_name_folded"), table_name="clients")
    # A plain DROP COLUMN (SQLite 3.35+), not a rebuild the stored rows' foreign keys refuse.
    op.drop_column("clients", "company_name_folded")
