"""addendum count triggers can be deferred by a bulk load (PostgreSQL)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-22 05:05:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BODY = """
CREATE OR REPLACE FUNCTION addendum_counts_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {guard}IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE addendum_counts SET n = n - 1
         WHERE client_id = OLD.client_id AND reseller_key = coalesce(OLD.reseller_id, -1)
           AND status = OLD.status AND product_id = OLD.product_id AND shard = OLD.id % 16;
        UPDATE addendum_totals SET n = n - 1
         WHERE status = OLD.status AND product_id = OLD.product_id AND shard = OLD.id % 256;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO addendum_counts (client_id, reseller_key, status, product_id, shard, n)
        VALUES (NEW.client_id, coalesce(NEW.reseller_id, -1), NEW.status, NEW.product_id,
                NEW.id % 16, 1)
        ON CONFLICT (client_id, reseller_key, status, product_id, shard)
        DO UPDATE SET n = addendum_counts.n + 1;
        INSERT INTO addendum_totals (status, product_id, shard, n)
        VALUES (NEW.status, NEW.product_id, NEW.id % 256, 1)
        ON CONFLICT (status, product_id, shard) DO UPDATE SET n = addendum_totals.n + 1;
    END IF;
    RETURN NULL;
END $$
"""

# A bulk load (cloudadmin.billing.addendums.bulk_counts) sets this for its own
# transaction and rebuilds the counters once at its end.
_GUARD = """IF current_setting('cloudadmin.addendum_counts', true) = 'deferred' THEN
        RETURN NULL;
    END IF;
    """


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_BODY.replace("{guard}", _GUARD))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_BODY.replace("{guard}", ""))
