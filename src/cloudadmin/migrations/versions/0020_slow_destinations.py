"""delivery_states.slow, webhook_delivery_states.slow: destinations known to be slow

A subscription whose broker or receiver went ``Dispatcher.slow_seconds`` without taking
a message is marked slow; at most half of a dispatcher's lanes serve slow ones, so the
others stay free for everyone else (docs/events.md, "Slow destinations"). Kept in the
database so that every worker knows it, and a restarted one at once.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27 21:45:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLES = ("delivery_states", "webhook_delivery_states")


def upgrade() -> None:
    for table in _TABLES:
        # A plain ADD COLUMN with a constant default (SQLite too), no table rebuild.
        op.add_column(
            table, sa.Column("slow", sa.Boolean(), server_default=sa.false(), nullable=False)
        )


def downgrade() -> None:
    for table in _TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("slow")
