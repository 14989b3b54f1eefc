"""addendums: index (created_at, id) instead of (created_at)

A creation range read in id order takes the ids of its matches from this index alone
(an index-only scan) and sorts them, instead of fetching every matching row; it also
gives ``ordering=created_at`` (completed by id) without a sort, and counts a creation
range as the old index did.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23 03:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_addendums_created_at_id", "addendums", ["created_at", "id"])
    op.drop_index("ix_addendums_created_at", table_name="addendums")


def downgrade() -> None:
    op.create_index("ix_addendums_created_at", "addendums", ["created_at"])
    op.drop_index("ix_addendums_created_at_id", table_name="addendums")
