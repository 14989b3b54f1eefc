"""portal_sessions: the Admin Portal's sign-in sessions (docs/portal.md)

The cookie holds a random id; the row keeps its SHA-256, the session's CSRF token and
when it began and was last used (the idle timeout and the absolute lifetime).
portal_failed_sign_in_notices: when a failed sign-in as a user was last mailed.

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-28 02:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from cloudadmin.db.types import UTCDateTime

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "portal_sessions",
        sa.Column("id_hash", sa.String(64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("csrf_token", sa.String(64), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("last_seen_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_portal_sessions_user_id_users"),
            ondelete="CASCADE",
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id_hash", name=op.f("pk_portal_sessions")),
    )
    op.create_index(op.f("ix_portal_sessions_user_id"), "portal_sessions", ["user_id"])
    op.create_table(
        "portal_failed_sign_in_notices",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("last_sent_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_portal_failed_sign_in_notices_user_id_users"),
            ondelete="CASCADE",
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("user_id", name=op.f("pk_portal_failed_sign_in_notices")),
    )


def downgrade() -> None:
    op.drop_table("portal_failed_sign_in_notices")
    op.drop_table("portal_sessions")
