"""portal_preferences: what a person keeps in the Admin Portal (docs/portal.md)

Saved filter presets and the chosen columns of a table, a JSON value by name, for a
user (``user:<id>``) or a seller (``seller:<id>``).

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-28 04:50:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from cloudadmin.db.types import JSONType, UTCDateTime

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "portal_preferences",
        sa.Column("principal", sa.String(40), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("value", JSONType, nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("principal", "name", name=op.f("pk_portal_preferences")),
    )


def downgrade() -> None:
    op.drop_table("portal_preferences")
