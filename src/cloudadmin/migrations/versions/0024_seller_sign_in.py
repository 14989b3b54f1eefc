"""seller_sign_in: reserved for sellers sign in to the Admin Portal (helper: Users section)

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-28 04:50:00
"""

from collections.abc import Sequence

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
