"""merge iam, billing and events branches

Revision ID: 0007
Revises: 0003, 0005, 0006
Create Date: 2026-11-22 04:37:18.653776
"""

from collections.abc import Sequence

revision: str = "0007"
down_revision: tuple[str, ...] = ("0003", "0005", "0006")
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
