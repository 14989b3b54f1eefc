"""monthly_reports: the Billing section's monthly report jobs (docs/portal.md)

A month's addendums per account, product and plan, requested in the Admin Portal and
computed by a job in the process that runs the dispatcher: its status, its lease and
attempts, and the CSV it produced.

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-28 04:50:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from cloudadmin.db.types import BigIntId, UTCDateTime

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "monthly_reports",
        sa.Column("id", BigIntId, autoincrement=True, nullable=False),
        sa.Column("month", sa.String(7), nullable=False),
        sa.Column("scope_account_id", sa.Integer(), nullable=True),
        sa.Column("requested_by_user_id", sa.Integer(), nullable=True),
        sa.Column("requested_by_email", sa.String(254), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("failure", sa.Text(), nullable=True),
        sa.Column("requested_at", UTCDateTime(), nullable=False),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("lease_owner", sa.String(100), nullable=True),
        sa.Column("lease_until", UTCDateTime(), nullable=True),
        sa.Column("line_count", sa.Integer(), nullable=True),
        sa.Column("content", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["scope_account_id"],
            ["clients.id"],
            name=op.f("fk_monthly_reports_scope_account_id_clients"),
            ondelete="CASCADE",
            deferrable=True,
            initially="DEFERRED",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_monthly_reports")),
    )
    op.create_index(
        "ix_monthly_reports_scope_account_id_id", "monthly_reports", ["scope_account_id", "id"]
    )
    op.create_index(
        "ix_monthly_reports_status_lease_until", "monthly_reports", ["status", "lease_until"]
    )


def downgrade() -> None:
    op.drop_table("monthly_reports")
