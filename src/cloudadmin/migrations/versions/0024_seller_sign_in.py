"""seller_sign_in: sellers sign in to the Admin Portal (docs/access.md, "The Admin
Portal: sellers")

sellers: the password's argon2id hash (set through the invitation's link), ``blocked``
(the provider's Block/Activate) and when the last invitation was mailed.
portal_sessions: a session signs in a user or a seller, exactly one of them.

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-28 04:50:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from cloudadmin.db.types import UTCDateTime

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("sellers") as batch:
        batch.add_column(sa.Column("password_hash", sa.Text(), nullable=True))
        batch.add_column(
            sa.Column("blocked", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch.add_column(sa.Column("invited_at", UTCDateTime(), nullable=True))
    with op.batch_alter_table("sellers") as batch:
        batch.alter_column("blocked", server_default=None)
    with op.batch_alter_table("portal_sessions") as batch:
        batch.alter_column("user_id", existing_type=sa.Integer(), nullable=True)
        batch.add_column(sa.Column("seller_id", sa.Integer(), nullable=True))
        batch.create_foreign_key(
            op.f("fk_portal_sessions_seller_id_sellers"),
            "sellers",
            ["seller_id"],
            ["id"],
            ondelete="CASCADE",
            initially="DEFERRED",
            deferrable=True,
        )
        batch.create_index(op.f("ix_portal_sessions_seller_id"), ["seller_id"])
        batch.create_check_constraint(
            op.f("ck_portal_sessions_one_person"), "(user_id IS NULL) <> (seller_id IS NULL)"
        )


def downgrade() -> None:
    # A seller's sessions end: the column that names them goes.
    op.execute("DELETE FROM portal_sessions WHERE seller_id IS NOT NULL")
    with op.batch_alter_table("portal_sessions") as batch:
        batch.drop_constraint(op.f("ck_portal_sessions_one_person"), type_="check")
        batch.drop_index(op.f("ix_portal_sessions_seller_id"))
        batch.drop_constraint(op.f("fk_portal_sessions_seller_id_sellers"), type_="foreignkey")
        batch.drop_column("seller_id")
        batch.alter_column("user_id", existing_type=sa.Integer(), nullable=False)
    with op.batch_alter_table("sellers") as batch:
        batch.drop_column("invited_at")
        batch.drop_column("blocked")
        batch.drop_column("password_hash")
