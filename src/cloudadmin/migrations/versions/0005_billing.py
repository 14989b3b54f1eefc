"""billing: folded names, list indexes, exact counts kept by triggers

Revision ID: 0005
Revises: 0002
Create Date: 2026-11-22 04:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Counts per (client, reseller, status, product) and per (status, product), kept
# exact in the addendums' own transactions. reseller_key = reseller_id, null as -1;
# rows spread over shards of the addendum id (see the models' docstrings).
_PG_FUNCTIONS = [
    """
CREATE FUNCTION addendum_counts_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
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
""",
    """
CREATE FUNCTION addendum_counts_reset() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM addendum_counts;
    DELETE FROM addendum_totals;
    RETURN NULL;
END $$
""",
]

_PG_TRIGGERS = [
    "CREATE TRIGGER addendums_count_insert_delete AFTER INSERT OR DELETE ON addendums "
    "FOR EACH ROW EXECUTE FUNCTION addendum_counts_apply()",
    "CREATE TRIGGER addendums_count_update AFTER UPDATE ON addendums FOR EACH ROW "
    "WHEN (OLD.client_id IS DISTINCT FROM NEW.client_id "
    "OR OLD.reseller_id IS DISTINCT FROM NEW.reseller_id "
    "OR OLD.status IS DISTINCT FROM NEW.status OR OLD.product_id IS DISTINCT FROM NEW.product_id) "
    "EXECUTE FUNCTION addendum_counts_apply()",
    "CREATE TRIGGER addendums_count_truncate AFTER TRUNCATE ON addendums "
    "FOR EACH STATEMENT EXECUTE FUNCTION addendum_counts_reset()",
]

_SQLITE_PLUS = """
    INSERT INTO addendum_counts (client_id, reseller_key, status, product_id, shard, n)
    VALUES (NEW.client_id, coalesce(NEW.reseller_id, -1), NEW.status, NEW.product_id,
            NEW.id % 16, 1)
    ON CONFLICT (client_id, reseller_key, status, product_id, shard) DO UPDATE SET n = n + 1;
    INSERT INTO addendum_totals (status, product_id, shard, n)
    VALUES (NEW.status, NEW.product_id, NEW.id % 256, 1)
    ON CONFLICT (status, product_id, shard) DO UPDATE SET n = n + 1;
"""
_SQLITE_MINUS = """
    UPDATE addendum_counts SET n = n - 1
     WHERE client_id = OLD.client_id AND reseller_key = coalesce(OLD.reseller_id, -1)
       AND status = OLD.status AND product_id = OLD.product_id AND shard = OLD.id % 16;
    UPDATE addendum_totals SET n = n - 1
     WHERE status = OLD.status AND product_id = OLD.product_id AND shard = OLD.id % 256;
"""
_SQLITE_TRIGGERS = [
    f"CREATE TRIGGER addendums_count_insert AFTER INSERT ON addendums BEGIN {_SQLITE_PLUS} END",
    f"CREATE TRIGGER addendums_count_delete AFTER DELETE ON addendums BEGIN {_SQLITE_MINUS} END",
    "CREATE TRIGGER addendums_count_update AFTER UPDATE ON addendums "
    "WHEN OLD.client_id IS NOT NEW.client_id OR OLD.reseller_id IS NOT NEW.reseller_id "
    "OR OLD.status IS NOT NEW.status OR OLD.product_id IS NOT NEW.product_id "
    f"BEGIN {_SQLITE_MINUS} {_SQLITE_PLUS} END",
]

_TRIGGER_NAMES = {
    "postgresql": [
        "addendums_count_insert_delete",
        "addendums_count_update",
        "addendums_count_truncate",
    ],
    "sqlite": ["addendums_count_insert", "addendums_count_delete", "addendums_count_update"],
}


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.create_table(
        "addendum_counts",
        sa.Column("client_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("reseller_key", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("product_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("shard", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(
            "client_id",
            "reseller_key",
            "status",
            "product_id",
            "shard",
            name=op.f("pk_addendum_counts"),
        ),
    )
    op.create_table(
        "addendum_totals",
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("product_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("shard", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("status", "product_id", "shard", name=op.f("pk_addendum_totals")),
    )
    with op.batch_alter_table("addendums", schema=None) as batch_op:
        batch_op.add_column(sa.Column("plan_name_folded", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("product_name_folded", sa.Text(), nullable=True))
    # Rows stored before this revision: Python's casefold is not available in SQL, so
    # the folded copies are computed here, row by row, then the columns become NOT NULL.
    _fold_existing_rows()
    with op.batch_alter_table("addendums", schema=None) as batch_op:
        batch_op.alter_column("plan_name_folded", existing_type=sa.Text(), nullable=False)
        batch_op.alter_column("product_name_folded", existing_type=sa.Text(), nullable=False)
        batch_op.drop_index("ix_addendums_client_id")
        batch_op.create_index("ix_addendums_client_id_id", ["client_id", "id"], unique=False)
        batch_op.create_index(batch_op.f("ix_addendums_created_at"), ["created_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_addendums_payer_id"), ["payer_id"], unique=False)
        batch_op.create_index(
            "ix_addendums_product_id_status_id", ["product_id", "status", "id"], unique=False
        )
    if dialect == "postgresql":
        for statement in _PG_FUNCTIONS + _PG_TRIGGERS:
            op.execute(statement)
    else:
        for statement in _SQLITE_TRIGGERS:
            op.execute(statement)
    # Counts of rows stored before this revision.
    op.execute(
        "INSERT INTO addendum_counts (client_id, reseller_key, status, product_id, shard, n) "
        "SELECT client_id, coalesce(reseller_id, -1), status, product_id, id % 16, count(*) "
        "FROM addendums "
        "GROUP BY client_id, coalesce(reseller_id, -1), status, product_id, id % 16"
    )
    op.execute(
        "INSERT INTO addendum_totals (status, product_id, shard, n) "
        "SELECT status, product_id, id % 256, count(*) FROM addendums "
        "GROUP BY status, product_id, id % 256"
    )


def _fold_existing_rows() -> None:
    import unicodedata

    def fold(text: str) -> str:  # frozen copy of cloudadmin.kit.caseless.fold
        return unicodedata.normalize("NFC", unicodedata.normalize("NFD", text).casefold())

    bind = op.get_bind()
    rows = bind.execute(sa.text("SELECT id, plan_name, product_name FROM addendums")).all()
    if not rows:
        return
    bind.execute(
        sa.text(
            "UPDATE addendums SET plan_name_folded = :plan, product_name_folded = :product "
            "WHERE id = :id"
        ),
        [{"id": r[0], "plan": fold(r[1]), "product": fold(r[2])} for r in rows],
    )


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    for name in _TRIGGER_NAMES[dialect]:
        op.execute(
            f"DROP TRIGGER IF EXISTS {name}" + (" ON addendums" if dialect == "postgresql" else "")
        )
    if dialect == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS addendum_counts_apply()")
        op.execute("DROP FUNCTION IF EXISTS addendum_counts_reset()")
    with op.batch_alter_table("addendums", schema=None) as batch_op:
        batch_op.drop_index("ix_addendums_product_id_status_id")
        batch_op.drop_index(batch_op.f("ix_addendums_payer_id"))
        batch_op.drop_index(batch_op.f("ix_addendums_created_at"))
        batch_op.drop_index("ix_addendums_client_id_id")
        batch_op.create_index("ix_addendums_client_id", ["client_id"], unique=False)
        batch_op.drop_column("product_name_folded")
        batch_op.drop_column("plan_name_folded")
    op.drop_table("addendum_totals")
    op.drop_table("addendum_counts")
