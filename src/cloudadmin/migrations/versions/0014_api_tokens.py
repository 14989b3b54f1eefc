"""api_keys as the API tokens of /iam/clients/{clientId}/tokens: description, role,
last_usage

The table already holds the name, the issuing user (user_id), the expiry (expires_at,
the answer's exp_date), the deletion flag (revoked, the answer's deleted) and created_at.
Keys made before (the CLI's `apikey create`, imports) keep role_id NULL: they act with
every group of their user (docs/iam.md, "API tokens").

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-23 14:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from cloudadmin.db.types import UTCDateTime

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("api_keys") as batch:
        batch.add_column(sa.Column("description", sa.String(255), nullable=True))
        batch.add_column(sa.Column("last_usage", UTCDateTime(), nullable=True))
        batch.add_column(sa.Column("role_id", sa.Integer(), nullable=True))
        batch.create_foreign_key(
            "fk_api_keys_role_id_groups",
            "groups",
            ["role_id"],
            ["id"],
            deferrable=True,
            initially="DEFERRED",
        )


def downgrade() -> None:
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_constraint("fk_api_keys_role_id_groups", type_="foreignkey")
        batch.drop_column("role_id")
        batch.drop_column("last_usage")
        batch.drop_column("description")
