"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-22 03:10:06.013998
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import cloudadmin.db.types

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    # clients.seller_id and sellers.reseller_id point at each other. SQLite accepts a
    # reference to a table created later (and cannot ALTER one in); PostgreSQL adds
    # the key once both tables exist.
    seller_fk = (
        [
            sa.ForeignKeyConstraint(
                ["seller_id"],
                ["sellers.id"],
                name=op.f("fk_clients_seller_id_sellers"),
                ondelete="SET NULL",
                initially="DEFERRED",
                deferrable=True,
            ),
        ]
        if sqlite
        else []
    )
    op.create_table(
        "activity_log",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("actions", sa.String(length=255), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("user_email", sa.String(length=254), nullable=False),
        sa.Column("client_id", sa.Integer(), nullable=False),
        sa.Column("token_id", sa.Integer(), nullable=True),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("requested_at", cloudadmin.db.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("path", sa.String(length=2048), nullable=False),
        sa.Column("remote_ip_address", sa.String(length=45), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("method", sa.String(length=10), nullable=False),
        sa.Column("query_params", sa.Text(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=False),
        sa.Column("reverted", sa.Boolean(), nullable=False),
        sa.Column("request_id", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_activity_log")),
    )
    with op.batch_alter_table("activity_log", schema=None) as batch_op:
        batch_op.create_index("ix_activity_log_client_id_id", ["client_id", "id"], unique=False)
        batch_op.create_index("ix_activity_log_user_id_id", ["user_id", "id"], unique=False)

    op.create_table(
        "clients",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("email", sa.String(length=254), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("company_name", sa.String(length=255), nullable=False),
        sa.Column(
            "capabilities",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "service_statuses",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "paid_features",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "free_features",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("entry_base_domain", sa.String(length=255), nullable=True),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.Column("bill_type", sa.String(length=50), nullable=False),
        sa.Column("is_test", sa.Boolean(), nullable=False),
        sa.Column("phone", sa.String(length=50), nullable=True),
        sa.Column("website", sa.String(length=255), nullable=True),
        sa.Column("signup_process", sa.String(length=20), nullable=True),
        sa.Column("custom_id", sa.String(length=255), nullable=True),
        sa.Column("country_code", sa.String(length=2), nullable=True),
        sa.Column("seller_id", sa.Integer(), nullable=True),
        sa.Column("reseller_id", sa.Integer(), nullable=True),
        sa.Column("client_type", sa.String(length=20), nullable=False),
        sa.Column("owner", sa.Integer(), nullable=True),
        sa.Column("created_at", cloudadmin.db.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["reseller_id"],
            ["clients.id"],
            name=op.f("fk_clients_reseller_id_clients"),
            initially="DEFERRED",
            deferrable=True,
        ),
        *seller_fk,
        sa.PrimaryKeyConstraint("id", name=op.f("pk_clients")),
    )
    with op.batch_alter_table("clients", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_clients_reseller_id"), ["reseller_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_clients_seller_id"), ["seller_id"], unique=False)

    op.create_table(
        "groups",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("name", sa.String(length=150), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_groups")),
        sa.UniqueConstraint("name", name=op.f("uq_groups_name")),
    )
    groups = sa.table("groups", sa.column("id", sa.Integer), sa.column("name", sa.String))
    op.bulk_insert(
        groups,
        [
            {"id": 1, "name": "Administrators"},
            {"id": 2, "name": "Users"},
            {"id": 5, "name": "Engineers"},
            {"id": 3009, "name": "Purge and Prefetch only (API+Web)"},
            {"id": 3022, "name": "Purge and Prefetch only (API)"},
        ],
    )
    op.create_table(
        "regions",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_regions")),
    )
    op.create_table(
        "sellers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("email", sa.String(length=150), nullable=False),
        sa.Column("full_name", sa.String(length=255), nullable=False),
        sa.Column("phone", sa.String(length=30), nullable=True),
        sa.Column("company", sa.String(length=255), nullable=True),
        sa.Column("reseller_id", sa.Integer(), nullable=False),
        sa.Column("date_joined", cloudadmin.db.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("activated", sa.Boolean(), nullable=False),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["reseller_id"],
            ["clients.id"],
            name=op.f("fk_sellers_reseller_id_clients"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sellers")),
    )
    with op.batch_alter_table("sellers", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_sellers_reseller_id"), ["reseller_id"], unique=False)
    op.create_index("uq_sellers_email_lower", "sellers", [sa.text("lower(email)")], unique=True)
    if not sqlite:
        op.create_foreign_key(
            op.f("fk_clients_seller_id_sellers"),
            "clients",
            "sellers",
            ["seller_id"],
            ["id"],
            ondelete="SET NULL",
            deferrable=True,
            initially="DEFERRED",
        )

    op.create_table(
        "addendums",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("client_id", sa.Integer(), nullable=False),
        sa.Column("payer_id", sa.BigInteger(), nullable=True),
        sa.Column("provider_id", sa.BigInteger(), nullable=True),
        sa.Column("reseller_id", sa.BigInteger(), nullable=True),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("active_start", cloudadmin.db.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("active_end", cloudadmin.db.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", cloudadmin.db.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("currency_id", sa.Integer(), nullable=False),
        sa.Column("currency_char_code", sa.String(length=3), nullable=False),
        sa.Column("currency_symbol", sa.String(length=5), nullable=False),
        sa.Column("plan_id", sa.Integer(), nullable=False),
        sa.Column("plan_name", sa.String(length=255), nullable=False),
        sa.Column("product_id", sa.Integer(), nullable=False),
        sa.Column("product_name", sa.String(length=255), nullable=False),
        sa.Column("product_internal_name", sa.String(length=50), nullable=False),
        sa.ForeignKeyConstraint(
            ["client_id"],
            ["clients.id"],
            name=op.f("fk_addendums_client_id_clients"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_addendums")),
    )
    with op.batch_alter_table("addendums", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_addendums_client_id"), ["client_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_addendums_reseller_id"), ["reseller_id"], unique=False)

    op.create_table(
        "amqp_subscriptions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("client_id", sa.Integer(), nullable=False),
        sa.Column("connection_string_encrypted", sa.Text(), nullable=False),
        sa.Column("exchange", sa.String(length=255), nullable=True),
        sa.Column("routing_key", sa.String(length=255), nullable=True),
        sa.Column("receive_child_client_events", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["client_id"],
            ["clients.id"],
            name=op.f("fk_amqp_subscriptions_client_id_clients"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_amqp_subscriptions")),
        sa.UniqueConstraint("client_id", name=op.f("uq_amqp_subscriptions_client_id")),
    )
    op.create_table(
        "branding",
        sa.Column("reseller_id", sa.Integer(), nullable=False),
        sa.Column("domain", sa.String(length=255), nullable=False),
        sa.Column(
            "public_settings",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "mail_server",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("mail_password_encrypted", sa.Text(), nullable=True),
        sa.Column("logo_path", sa.String(length=255), nullable=True),
        sa.Column("favicon_path", sa.String(length=255), nullable=True),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["reseller_id"],
            ["clients.id"],
            name=op.f("fk_branding_reseller_id_clients"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("reseller_id", name=op.f("pk_branding")),
    )
    op.create_table(
        "notification_settings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("reseller_id", sa.Integer(), nullable=False),
        sa.Column("notification_type", sa.String(length=30), nullable=False),
        sa.Column("email", sa.String(length=254), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["reseller_id"],
            ["clients.id"],
            name=op.f("fk_notification_settings_reseller_id_clients"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notification_settings")),
    )
    with op.batch_alter_table("notification_settings", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_notification_settings_reseller_id"), ["reseller_id"], unique=False
        )

    op.create_table(
        "price_catalogues",
        sa.Column("region_id", sa.Integer(), nullable=False),
        sa.Column("currency_code", sa.String(length=3), nullable=False),
        sa.Column(
            "flavors",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "volume_types",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("public_ipv4_per_hour", sa.String(length=40), nullable=False),
        sa.Column("tax_percent", sa.String(length=40), nullable=False),
        sa.Column("discount_percent", sa.String(length=40), nullable=False),
        sa.ForeignKeyConstraint(
            ["region_id"],
            ["regions.id"],
            name=op.f("fk_price_catalogues_region_id_regions"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("region_id", name=op.f("pk_price_catalogues")),
    )
    op.create_table(
        "projects",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("client_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.ForeignKeyConstraint(
            ["client_id"],
            ["clients.id"],
            name=op.f("fk_projects_client_id_clients"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_projects")),
    )
    with op.batch_alter_table("projects", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_projects_client_id"), ["client_id"], unique=False)

    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("email", sa.String(length=254), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=True),
        sa.Column("lang", sa.String(length=2), nullable=False),
        sa.Column("phone", sa.String(length=50), nullable=True),
        sa.Column("company", sa.String(length=255), nullable=True),
        sa.Column("client_id", sa.Integer(), nullable=False),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.Column("activated", sa.Boolean(), nullable=False),
        sa.Column("sso_auth", sa.Boolean(), nullable=False),
        sa.Column("two_fa", sa.Boolean(), nullable=False),
        sa.Column(
            "auth_types",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("user_type", sa.String(length=20), nullable=False),
        sa.Column("is_active", sa.Boolean(), nullable=False),
        sa.Column("superuser", sa.Boolean(), nullable=False),
        sa.Column("password_hash", sa.Text(), nullable=True),
        sa.Column("date_joined", cloudadmin.db.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["client_id"],
            ["clients.id"],
            name=op.f("fk_users_client_id_clients"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
    )
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_users_client_id"), ["client_id"], unique=False)

    op.create_table(
        "api_keys",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=True),
        sa.Column("secret_hash", sa.String(length=128), nullable=False),
        sa.Column("expires_at", cloudadmin.db.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("revoked", sa.Boolean(), nullable=False),
        sa.Column(
            "created_at",
            cloudadmin.db.types.UTCDateTime(timezone=True),
            server_default=sa.text("(CURRENT_TIMESTAMP)"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_api_keys_user_id_users"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
    )
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_keys_user_id"), ["user_id"], unique=False)

    op.create_table(
        "lifecycle_policies",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("region_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("action", sa.String(length=50), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column(
            "schedules",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "volumes",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_lifecycle_policies_project_id_projects"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["region_id"],
            ["regions.id"],
            name=op.f("fk_lifecycle_policies_region_id_regions"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lifecycle_policies")),
    )
    op.create_table(
        "listeners",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("region_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=63), nullable=False),
        sa.Column(
            "allowed_cidrs",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("connection_limit", sa.Integer(), nullable=False),
        sa.Column("creator_task_id", sa.String(length=36), nullable=True),
        sa.Column(
            "insert_headers",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("load_balancer_id", sa.String(length=36), nullable=True),
        sa.Column("operating_status", sa.String(length=20), nullable=False),
        sa.Column("pool_count", sa.Integer(), nullable=True),
        sa.Column("protocol", sa.String(length=20), nullable=False),
        sa.Column("protocol_port", sa.Integer(), nullable=False),
        sa.Column("provisioning_status", sa.String(length=20), nullable=False),
        sa.Column("secret_id", sa.String(length=255), nullable=True),
        sa.Column(
            "sni_secret_id",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column(
            "stats",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("task_id", sa.String(length=36), nullable=True),
        sa.Column("timeout_client_data", sa.Integer(), nullable=True),
        sa.Column("timeout_member_connect", sa.Integer(), nullable=True),
        sa.Column("timeout_member_data", sa.Integer(), nullable=True),
        sa.Column(
            "user_list",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_listeners_project_id_projects"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["region_id"],
            ["regions.id"],
            name=op.f("fk_listeners_region_id_regions"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_listeners")),
    )
    op.create_table(
        "user_groups",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["group_id"],
            ["groups.id"],
            name=op.f("fk_user_groups_group_id_groups"),
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_user_groups_user_id_users"),
            ondelete="CASCADE",
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("user_id", "group_id", name=op.f("pk_user_groups")),
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        op.drop_constraint(op.f("fk_clients_seller_id_sellers"), "clients", type_="foreignkey")
    op.drop_table("user_groups")
    op.drop_table("listeners")
    op.drop_table("lifecycle_policies")
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_keys_user_id"))

    op.drop_table("api_keys")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_users_client_id"))

    op.drop_table("users")
    with op.batch_alter_table("projects", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_projects_client_id"))

    op.drop_table("projects")
    op.drop_table("price_catalogues")
    with op.batch_alter_table("notification_settings", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_notification_settings_reseller_id"))

    op.drop_table("notification_settings")
    op.drop_table("branding")
    op.drop_table("amqp_subscriptions")
    with op.batch_alter_table("addendums", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_addendums_reseller_id"))
        batch_op.drop_index(batch_op.f("ix_addendums_client_id"))

    op.drop_table("addendums")
    with op.batch_alter_table("sellers", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_sellers_reseller_id"))

    op.drop_table("sellers")
    op.drop_table("regions")
    op.drop_table("groups")
    with op.batch_alter_table("clients", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_clients_seller_id"))
        batch_op.drop_index(batch_op.f("ix_clients_reseller_id"))

    op.drop_table("clients")
    with op.batch_alter_table("activity_log", schema=None) as batch_op:
        batch_op.drop_index("ix_activity_log_user_id_id")
        batch_op.drop_index("ix_activity_log_client_id_id")

    op.drop_table("activity_log")
