"""two_factor_and_reset: two-factor sign-in and password reset (docs/portal.md)

user_two_factor: a user's TOTP secret (encrypted under the secret key), when its first
code confirmed it, and the time step of the last code accepted (a code is used once);
the wrong codes in a row at the sign-in's second step, and when the last came (past a
limit, no code passes for a while). A password reset needs no table: its link is the
set-password token, bound to the password hash (iam/users/set_password_token.py), so
setting a password voids it.

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-28 04:50:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from cloudadmin.db.types import UTCDateTime

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "user_two_factor",
        sa.Column("user_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("secret_encrypted", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("confirmed_at", UTCDateTime(), nullable=True),
        sa.Column("last_step", sa.Integer(), nullable=True),
        sa.Column("failed_codes", sa.Integer(), server_default="0", nullable=False),
        sa.Column("last_failed_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_user_two_factor_user_id_users"),
            ondelete="CASCADE",
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("user_id", name=op.f("pk_user_two_factor")),
    )


def downgrade() -> None:
    op.drop_table("user_two_factor")
