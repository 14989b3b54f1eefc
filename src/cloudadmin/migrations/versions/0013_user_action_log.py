"""user action log: the stored events become the real API's user-action records

GET /cloud/v1/user_actions reads the outbox's events, and subscribers receive the same
record (docs/events.md). The events gain the columns the log filters on, whether they
were acknowledged, and their resources as rows; stored bodies gain the record's fields
(is_complete, task_id, total_price, issued_by_user_id) and listener renames the
resource's search_field (the new name).

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-23 13:30:00
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
_BIGINT_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_BATCH = 1000

_events = sa.table(
    "user_action_events",
    sa.column("id", sa.BigInteger()),
    sa.column("body", _JSON),
    sa.column("user_id", sa.Integer()),
    sa.column("action_type", sa.String()),
    sa.column("api_group", sa.String()),
    sa.column("project_id", sa.Integer()),
    sa.column("region_id", sa.Integer()),
    sa.column("source_user_ip", sa.String()),
    sa.column("user_agent", sa.String()),
    sa.column("acknowledged", sa.Boolean()),
)
_deliveries = sa.table(
    "event_deliveries",
    sa.column("event_id", sa.BigInteger()),
    sa.column("delivered", sa.Boolean()),
)
_resources = sa.table(
    "user_action_resources",
    sa.column("event_id", sa.BigInteger()),
    sa.column("resource_type", sa.String()),
    sa.column("resource_id", sa.String()),
    sa.column("search_field", sa.String()),
)


def upgrade() -> None:
    # Plain ALTER TABLE, no batch copy: on SQLite a copy drops the old table, and with
    # foreign keys on that deletes the events' deliveries (ON DELETE CASCADE).
    op.add_column("user_action_events", sa.Column("user_id", sa.Integer(), nullable=True))
    op.add_column(
        "user_action_events",
        sa.Column("action_type", sa.String(50), nullable=False, server_default=""),
    )
    op.add_column(
        "user_action_events",
        sa.Column("api_group", sa.String(50), nullable=False, server_default=""),
    )
    op.add_column("user_action_events", sa.Column("project_id", sa.Integer(), nullable=True))
    op.add_column("user_action_events", sa.Column("region_id", sa.Integer(), nullable=True))
    op.add_column("user_action_events", sa.Column("source_user_ip", sa.String(64), nullable=True))
    op.add_column("user_action_events", sa.Column("user_agent", sa.String(512), nullable=True))
    op.add_column(
        "user_action_events",
        sa.Column("acknowledged", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.create_index(
        "ix_user_action_events_client_id_created_at_id",
        "user_action_events",
        ["client_id", "created_at", "id"],
    )
    op.create_index(
        "ix_user_action_events_created_at_id", "user_action_events", ["created_at", "id"]
    )
    op.create_table(
        "user_action_resources",
        sa.Column("id", _BIGINT_ID, nullable=False),
        sa.Column("event_id", sa.BigInteger(), nullable=False),
        sa.Column("resource_type", sa.String(64), nullable=False),
        sa.Column("resource_id", sa.String(255), nullable=False),
        sa.Column("search_field", sa.String(255), nullable=True),
        sa.ForeignKeyConstraint(
            ["event_id"],
            ["user_action_events.id"],
            name=op.f("fk_user_action_resources_event_id_user_action_events"),
            ondelete="CASCADE",
            initially="DEFERRED",
            deferrable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_user_action_resources")),
    )
    op.create_index("ix_user_action_resources_event_id", "user_action_resources", ["event_id"])
    op.create_index(
        "ix_user_action_resources_resource_id", "user_action_resources", ["resource_id"]
    )
    _backfill()


def _text(value: Any, size: int) -> str | None:
    return None if value is None else str(value)[:size]


def _record(body: dict[str, Any]) -> dict[str, Any]:
    """A body written before 0013, completed to the record (events/user_actions.py)."""
    out = dict(body)
    out.setdefault("task_id", None)
    out.setdefault("is_complete", True)
    out.setdefault("total_price", None)
    out.setdefault("issued_by_user_id", body.get("user_id"))
    for key in (
        "email",
        "project_id",
        "region_id",
        "action_data",
        "token_id",
        "user_agent",
        "source_user_ip",
        "client_id",
    ):
        out.setdefault(key, None)
    out.setdefault("request_id", "")
    name = (body.get("action_data") or {}).get("name")
    resources = []
    for r in body.get("resources") or []:
        r = dict(r)
        if r.get("resource_type") == "lblistener" and isinstance(name, str):
            r.setdefault("search_field", name[:255])
        resources.append(r)
    out["resources"] = resources
    return out


def _backfill() -> None:
    conn = op.get_bind()
    last = 0
    while True:
        rows = conn.execute(
            sa.select(_events.c.id, _events.c.body)
            .where(_events.c.id > last)
            .order_by(_events.c.id)
            .limit(_BATCH)
        ).all()
        if not rows:
            return
        for event_id, body in rows:
            body = _record(body if isinstance(body, dict) else {})
            owed = conn.execute(
                sa.select(
                    sa.func.count(), sa.func.sum(sa.case((_deliveries.c.delivered, 0), else_=1))
                ).where(_deliveries.c.event_id == event_id)
            ).one()
            conn.execute(
                _events.update()
                .where(_events.c.id == event_id)
                .values(
                    body=body,
                    user_id=body.get("user_id"),
                    action_type=_text(body.get("action_type"), 50) or "",
                    api_group=_text(body.get("api_group"), 50) or "",
                    project_id=body.get("project_id"),
                    region_id=body.get("region_id"),
                    source_user_ip=_text(body.get("source_user_ip"), 64),
                    user_agent=_text(body.get("user_agent"), 512),
                    acknowledged=bool(owed[0]) and not owed[1],
                )
            )
            resources = [
                {
                    "event_id": event_id,
                    "resource_type": _text(r.get("resource_type"), 64) or "",
                    "resource_id": _text(r.get("resource_id"), 255) or "",
                    "search_field": _text(r.get("search_field"), 255),
                }
                for r in body["resources"]
            ]
            if resources:
                conn.execute(_resources.insert(), resources)
        last = rows[-1][0]


def downgrade() -> None:
    op.drop_index("ix_user_action_resources_resource_id", table_name="user_action_resources")
    op.drop_index("ix_user_action_resources_event_id", table_name="user_action_resources")
    op.drop_table("user_action_resources")
    op.drop_index("ix_user_action_events_created_at_id", table_name="user_action_events")
    op.drop_index("ix_user_action_events_client_id_created_at_id", table_name="user_action_events")
    # ALTER TABLE ... DROP COLUMN (SQLite 3.35+), again without a copy of the table.
    for column in (
        "acknowledged",
        "user_agent",
        "source_user_ip",
        "region_id",
        "project_id",
        "api_group",
        "action_type",
        "user_id",
    ):
        op.drop_column("user_action_events", column)
