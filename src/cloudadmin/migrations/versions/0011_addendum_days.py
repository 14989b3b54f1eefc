"""addendum_days: addendums per UTC day of creation, with id bounds, kept by triggers

A creation range was counted with COUNT(*) over the index (created_at, id) and its
page sorted every match by id (14,154 entries read twice for a month of a million
addendums). Counted from these rows it sums a few hundred counters, and the page walks
the primary key between the days' smallest and largest ids (docs/billing.md).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-23 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Days since 1970-01-01 of a UTC instant. SQLite stores instants as naive UTC text
# ('YYYY-MM-DD HH:MM:SS.ffffff'); julianday of 1970-01-01 is 2440587.5.
# asyncpg stores Python's datetime.max and datetime.min as +/-infinity: their days are
# those of 9999-12-31 and 0001-01-01, as in creation_days.day_number.
_PG_DAY = "addendum_day({t})"
_SQLITE_DAY = "CAST(julianday(substr({t}, 1, 10)) - 2440587.5 AS INTEGER)"

_PG_FUNCTIONS = [
    """
CREATE FUNCTION addendum_day(t timestamptz) RETURNS integer LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN isfinite(t) THEN (t AT TIME ZONE 'UTC')::date - DATE '1970-01-01'
                WHEN t > 'epoch'::timestamptz THEN 2932896
                ELSE -719162 END
$$
""",
    f"""
CREATE FUNCTION addendum_days_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('cloudadmin.addendum_counts', true) = 'deferred' THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE addendum_days SET n = n - 1
         WHERE day = {_PG_DAY.format(t="OLD.created_at")} AND shard = OLD.id % 16;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO addendum_days (day, shard, n, min_id, max_id)
        VALUES ({_PG_DAY.format(t="NEW.created_at")}, NEW.id % 16, 1, NEW.id, NEW.id)
        ON CONFLICT (day, shard) DO UPDATE
        SET n = addendum_days.n + 1,
            min_id = least(addendum_days.min_id, excluded.min_id),
            max_id = greatest(addendum_days.max_id, excluded.max_id);
    END IF;
    RETURN NULL;
END $$
""",
    """
CREATE FUNCTION addendum_days_reset() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM addendum_days;
    RETURN NULL;
END $$
""",
]

_PG_TRIGGERS = [
    "CREATE TRIGGER addendums_days_insert_delete AFTER INSERT OR DELETE ON addendums "
    "FOR EACH ROW EXECUTE FUNCTION addendum_days_apply()",
    "CREATE TRIGGER addendums_days_update AFTER UPDATE ON addendums FOR EACH ROW "
    "WHEN (OLD.created_at IS DISTINCT FROM NEW.created_at OR OLD.id <> NEW.id) "
    "EXECUTE FUNCTION addendum_days_apply()",
    "CREATE TRIGGER addendums_days_truncate AFTER TRUNCATE ON addendums "
    "FOR EACH STATEMENT EXECUTE FUNCTION addendum_days_reset()",
]

_SQLITE_PLUS = f"""
    INSERT INTO addendum_days (day, shard, n, min_id, max_id)
    VALUES ({_SQLITE_DAY.format(t="NEW.created_at")}, NEW.id % 16, 1, NEW.id, NEW.id)
    ON CONFLICT (day, shard) DO UPDATE
    SET n = n + 1, min_id = min(min_id, excluded.min_id), max_id = max(max_id, excluded.max_id);
"""
_SQLITE_MINUS = f"""
    UPDATE addendum_days SET n = n - 1
     WHERE day = {_SQLITE_DAY.format(t="OLD.created_at")} AND shard = OLD.id % 16;
"""
_SQLITE_TRIGGERS = [
    f"CREATE TRIGGER addendums_days_insert AFTER INSERT ON addendums BEGIN {_SQLITE_PLUS} END",
    f"CREATE TRIGGER addendums_days_delete AFTER DELETE ON addendums BEGIN {_SQLITE_MINUS} END",
    "CREATE TRIGGER addendums_days_update AFTER UPDATE ON addendums "
    "WHEN OLD.created_at IS NOT NEW.created_at OR OLD.id <> NEW.id "
    f"BEGIN {_SQLITE_MINUS} {_SQLITE_PLUS} END",
]

_TRIGGER_NAMES = {
    "postgresql": [
        "addendums_days_insert_delete",
        "addendums_days_update",
        "addendums_days_truncate",
    ],
    "sqlite": ["addendums_days_insert", "addendums_days_delete", "addendums_days_update"],
}


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.create_table(
        "addendum_days",
        sa.Column("day", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("shard", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.Column("min_id", sa.BigInteger(), nullable=False),
        sa.Column("max_id", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("day", "shard", name=op.f("pk_addendum_days")),
    )
    statements = _PG_FUNCTIONS + _PG_TRIGGERS if dialect == "postgresql" else _SQLITE_TRIGGERS
    for statement in statements:
        op.execute(statement)
    # Addendums stored before this revision; in day order, so that a range of days
    # reads few pages.
    day = (_PG_DAY if dialect == "postgresql" else _SQLITE_DAY).format(t="created_at")
    op.execute(
        "INSERT INTO addendum_days (day, shard, n, min_id, max_id) "
        f"SELECT {day}, id % 16, count(*), min(id), max(id) FROM addendums "
        "GROUP BY 1, 2 ORDER BY 1, 2"
    )


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    for name in _TRIGGER_NAMES[dialect]:
        op.execute(
            f"DROP TRIGGER IF EXISTS {name}" + (" ON addendums" if dialect == "postgresql" else "")
        )
    if dialect == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS addendum_days_apply()")
        op.execute("DROP FUNCTION IF EXISTS addendum_days_reset()")
        op.execute("DROP FUNCTION IF EXISTS addendum_day(timestamptz)")
    op.drop_table("addendum_days")
