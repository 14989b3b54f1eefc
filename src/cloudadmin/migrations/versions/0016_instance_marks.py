"""instance_marks: facts about the database itself, by name

The demo marks the database it made ("demo"), so that `serve --demo` loads only into
an empty database or its own, and finds its keys again on later starts (docs/configuration.md,
"The demo").

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-23 16:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from cloudadmin.db.types import UTCDateTime

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "instance_marks",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_instance_marks"),
    )


def downgrade() -> None:
    op.drop_table("instance_marks")
