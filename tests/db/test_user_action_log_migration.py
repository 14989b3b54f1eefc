"""Migration 0013: events stored before it read as complete user-action records."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from alembic import command
from sqlalchemy import text

from cloudadmin.config import Settings
from cloudadmin.db.engine import create_engine
from cloudadmin.db.migrate import alembic_config, upgrade
from tests.db.test_migrations import CLIENT_7, fresh_url  # noqa: F401  (fixture)


def old_body(n: int, **over: Any) -> dict[str, Any]:
    """An event body as 0012's code wrote it."""
    body = {
        "id": f"00000000-0000-4000-8000-{n:012d}", "action_type": "update",
        "api_group": "lblistener",
        "resources": [{"resource_id": f"l-{n}", "resource_type": "lblistener"}],
        "client_id": 7, "user_id": 8, "email": "u@example.com", "token_id": 9,
        "project_id": 11, "region_id": 12, "source_user_ip": "198.51.100.1",
        "user_agent": "ua/1", "timestamp": "2026-11-22T03:27:22.427264Z",
        "action_data": {"name": f"web-{n}"}, "request_id": "r",
    }  # fmt: skip
    body.update(over)
    return body


INSERT_EVENT = text(
    "INSERT INTO user_action_events (id, event_id, client_id, reseller_id, body, created_at)"
    " VALUES (:id, :event_id, 7, NULL, :body, CURRENT_TIMESTAMP)"
)
INSERT_DELIVERY = text(
    "INSERT INTO event_deliveries (id, event_id, subscription_id, delivered)"
    " VALUES (:id, :event_id, 5, :delivered)"
)


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


class TestUserActionLogMigration:
    async def test_upgrade_completes_stored_events_and_downgrade_drops(
        self,
        fresh_url: str,  # noqa: F811
        settings: Settings,
    ):
        await asyncio.to_thread(upgrade, fresh_url, "0012")
        engine = create_engine(settings, fresh_url)
        try:
            async with engine.begin() as conn:
                await conn.execute(CLIENT_7)
                await conn.execute(
                    text(
                        "INSERT INTO amqp_subscriptions (id, client_id,"
                        " connection_string_encrypted, receive_child_client_events)"
                        " VALUES (5, 7, 'x', false)"
                    )
                )
                for n in (1, 2, 3):
                    body = (
                        old_body(n)
                        if n != 3
                        else old_body(
                            3,
                            api_group="seller",
                            action_data={"email": "s@example.com"},
                            resources=[{"resource_id": "4", "resource_type": "seller"}],
                            project_id=None,
                            region_id=None,
                        )
                    )
                    await conn.execute(
                        INSERT_EVENT, {"id": n, "event_id": body["id"], "body": json.dumps(body)}
                    )
                # 1 delivered, 2 still owed, 3 owed to nobody.
                await conn.execute(INSERT_DELIVERY, {"id": 1, "event_id": 1, "delivered": True})
                await conn.execute(INSERT_DELIVERY, {"id": 2, "event_id": 2, "delivered": False})
            await asyncio.to_thread(upgrade, fresh_url)
            async with engine.connect() as conn:
                rows = (
                    await conn.execute(
                        text(
                            "SELECT id, body, acknowledged, user_id, action_type, api_group,"
                            " project_id, region_id, source_user_ip, user_agent"
                            " FROM user_action_events ORDER BY id"
                        )
                    )
                ).all()
                resources = (
                    await conn.execute(
                        text(
                            "SELECT event_id, resource_type, resource_id, search_field"
                            " FROM user_action_resources ORDER BY event_id"
                        )
                    )
                ).all()
                deliveries = (
                    (await conn.execute(text("SELECT id FROM event_deliveries ORDER BY id")))
                    .scalars()
                    .all()
                )
            assert deliveries == [1, 2]  # the table was altered, not copied and dropped
            assert [bool(r[2]) for r in rows] == [True, False, False]
            assert [tuple(r[3:]) for r in rows] == [
                (8, "update", "lblistener", 11, 12, "198.51.100.1", "ua/1"),
                (8, "update", "lblistener", 11, 12, "198.51.100.1", "ua/1"),
                (8, "update", "seller", None, None, "198.51.100.1", "ua/1"),
            ]
            first = _json(rows[0][1])
            assert first == {
                **old_body(1),
                "task_id": None,
                "is_complete": True,
                "total_price": None,
                "issued_by_user_id": 8,
                "resources": [
                    {"resource_id": "l-1", "resource_type": "lblistener", "search_field": "web-1"}
                ],
            }
            assert _json(rows[2][1])["resources"] == [
                {"resource_id": "4", "resource_type": "seller"}
            ]
            assert [tuple(r) for r in resources] == [
                (1, "lblistener", "l-1", "web-1"),
                (2, "lblistener", "l-2", "web-2"),
                (3, "seller", "4", None),
            ]

            await asyncio.to_thread(command.downgrade, alembic_config(fresh_url), "0012")
            async with engine.connect() as conn:
                assert (
                    await conn.execute(text("SELECT count(*) FROM user_action_events"))
                ).scalar() == 3
                assert (
                    await conn.execute(text("SELECT count(*) FROM event_deliveries"))
                ).scalar() == 2
        finally:
            await engine.dispose()
