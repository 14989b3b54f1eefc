"""addendums.plan_name_folded, product_name_folded: B-tree indexes for the name searches

The addendum list's ``plan_name`` and ``product_name`` match addendums whose folded name
contains the folded value (docs/billing.md, "Names"). On PostgreSQL the search walks the
few distinct names in these indexes, keeps those that contain the value and reads the
addendums equal to one of them, instead of testing ``LIKE '%…%'`` on every addendum.
SQLite keeps the ``LIKE``; the indexes are created there too, as the models declare them.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-23 23:30:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COLUMNS = ("plan_name_folded", "product_name_folded")


def upgrade() -> None:
    for column in _COLUMNS:
        op.create_index(f"ix_addendums_{column}", "addendums", [column])


def downgrade() -> None:
    for column in _COLUMNS:
        op.drop_index(f"ix_addendums_{column}", table_name="addendums")
