"""iam: per-account product availability; unique user e-mail

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 03:21:00.889731
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A plain ADD COLUMN: SQLite supports it with a constant default, and batch mode
    # would rebuild `clients`, which the foreign keys of stored rows refuse.
    op.add_column(
        "clients",
        sa.Column(
            "service_availability",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            server_default=sa.text("'{}'"),
            nullable=False,
        ),
    )
    op.create_index("uq_users_email_lower", "users", [sa.text("lower(email)")], unique=True)


def downgrade() -> None:
    op.drop_index("uq_users_email_lower", table_name="users")
    with op.batch_alter_table("clients", schema=None) as batch_op:
        batch_op.drop_column("service_availability")
