"""addendum totals over 16 shards instead of 256

An unfiltered count sums every row of addendum_totals: 256 shards made that 13,000
rows (about 1 ms on each request of the list); 16 make it 800. Since 0008 a bulk load
on PostgreSQL no longer runs the triggers row by row, which is what the 256 shards
were for. id % 256 % 16 = id % 16, so the counters fold exactly.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-22 08:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_PG_FUNCTION = """
CREATE OR REPLACE FUNCTION addendum_counts_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('cloudadmin.addendum_counts', true) = 'deferred' THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE addendum_counts SET n = n - 1
         WHERE client_id = OLD.client_id AND reseller_key = coalesce(OLD.reseller_id, -1)
           AND status = OLD.status AND product_id = OLD.product_id AND shard = OLD.id % 16;
        UPDATE addendum_totals SET n = n - 1
         WHERE status = OLD.status AND product_id = OLD.product_id
           AND shard = OLD.id % {shards};
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO addendum_counts (client_id, reseller_key, status, product_id, shard, n)
        VALUES (NEW.client_id, coalesce(NEW.reseller_id, -1), NEW.status, NEW.product_id,
                NEW.id % 16, 1)
        ON CONFLICT (client_id, reseller_key, status, product_id, shard)
        DO UPDATE SET n = addendum_counts.n + 1;
        INSERT INTO addendum_totals (status, product_id, shard, n)
        VALUES (NEW.status, NEW.product_id, NEW.id % {shards}, 1)
        ON CONFLICT (status, product_id, shard) DO UPDATE SET n = addendum_totals.n + 1;
    END IF;
    RETURN NULL;
END $$
"""

_SQLITE_PLUS = """
    INSERT INTO addendum_counts (client_id, reseller_key, status, product_id, shard, n)
    VALUES (NEW.client_id, coalesce(NEW.reseller_id, -1), NEW.status, NEW.product_id,
            NEW.id % 16, 1)
    ON CONFLICT (client_id, reseller_key, status, product_id, shard) DO UPDATE SET n = n + 1;
    INSERT INTO addendum_totals (status, product_id, shard, n)
    VALUES (NEW.status, NEW.product_id, NEW.id % {shards}, 1)
    ON CONFLICT (status, product_id, shard) DO UPDATE SET n = n + 1;
"""
_SQLITE_MINUS = """
    UPDATE addendum_counts SET n = n - 1
     WHERE client_id = OLD.client_id AND reseller_key = coalesce(OLD.reseller_id, -1)
       AND status = OLD.status AND product_id = OLD.product_id AND shard = OLD.id % 16;
    UPDATE addendum_totals SET n = n - 1
     WHERE status = OLD.status AND product_id = OLD.product_id AND shard = OLD.id % {shards};
"""


def _sqlite_triggers(shards: int) -> list[str]:
    plus = _SQLITE_PLUS.replace("{shards}", str(shards))
    minus = _SQLITE_MINUS.replace("{shards}", str(shards))
    return [
        "DROP TRIGGER IF EXISTS addendums_count_insert",
        "DROP TRIGGER IF EXISTS addendums_count_delete",
        "DROP TRIGGER IF EXISTS addendums_count_update",
        f"CREATE TRIGGER addendums_count_insert AFTER INSERT ON addendums BEGIN {plus} END",
        f"CREATE TRIGGER addendums_count_delete AFTER DELETE ON addendums BEGIN {minus} END",
        "CREATE TRIGGER addendums_count_update AFTER UPDATE ON addendums "
        "WHEN OLD.client_id IS NOT NEW.client_id OR OLD.reseller_id IS NOT NEW.reseller_id "
        "OR OLD.status IS NOT NEW.status OR OLD.product_id IS NOT NEW.product_id "
        f"BEGIN {minus} {plus} END",
    ]


def _use_shards(shards: int) -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_PG_FUNCTION.replace("{shards}", str(shards)))
    else:
        for statement in _sqlite_triggers(shards):
            op.execute(statement)


def upgrade() -> None:
    _use_shards(16)
    op.execute(
        "CREATE TEMPORARY TABLE addendum_totals_folded AS "
        "SELECT status, product_id, shard % 16 AS shard, sum(n) AS n FROM addendum_totals "
        "GROUP BY status, product_id, shard % 16"
    )
    op.execute("DELETE FROM addendum_totals")
    op.execute(
        "INSERT INTO addendum_totals (status, product_id, shard, n) "
        "SELECT status, product_id, shard, n FROM addendum_totals_folded"
    )
    op.execute("DROP TABLE addendum_totals_folded")


def downgrade() -> None:
    _use_shards(256)
    # id % 16 does not give id % 256 back: count again from the addendums.
    op.execute("DELETE FROM addendum_totals")
    op.execute(
        "INSERT INTO addendum_totals (status, product_id, shard, n) "
        "SELECT status, product_id, id % 256, count(*) FROM addendums "
        "GROUP BY status, product_id, id % 256"
    )
