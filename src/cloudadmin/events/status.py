"""`cloudadmin events status`: what the outbox holds, per subscription."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import Subquery, case, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from cloudadmin.config import Settings
from cloudadmin.db.engine import create_engine
from cloudadmin.db.models import MailMessage, UserActionEvent
from cloudadmin.events.queues import AMQP, WEBHOOK, AnyQueue
from cloudadmin.kit.timeparse import isoformat_z


async def _per_subscription(conn: AsyncConnection, queue: AnyQueue) -> list[dict[str, object]]:
    sub: Any = queue.subscription
    delivery: Any = queue.delivery
    state: Any = queue.state
    pending = func.sum(case((delivery.delivered.is_(False), 1), else_=0))
    delivered = func.sum(case((delivery.delivered.is_(True), 1), else_=0))
    rows = (
        await conn.execute(
            select(
                sub.id,
                sub.client_id,
                func.coalesce(pending, 0),
                func.coalesce(delivered, 0),
                state.attempts,
                state.next_attempt_at,
                state.last_error,
            )
            .outerjoin(delivery, delivery.subscription_id == sub.id)
            .outerjoin(state, state.subscription_id == sub.id)
            .group_by(
                sub.id, sub.client_id, state.attempts, state.next_attempt_at, state.last_error
            )
            .order_by(sub.id)
        )
    ).all()
    return [
        {
            "subscription": r[0],
            "client": r[1],
            "pending": int(r[2]),
            "delivered": int(r[3]),
            "failing": bool(r[4]),
            "attempts": r[4] or 0,
            "next_attempt_at": isoformat_z(r[5]) if r[5] else None,
            "last_error": r[6],
        }
        for r in rows
    ]


def pending_by_subscription(queue: AnyQueue) -> Subquery:
    """Per subscription of ``queue`` that is owed events (columns ``sid``, ``n``,
    ``oldest``): how many, and when the oldest of them happened. Reads only undelivered
    rows (their index); the backlog below and the portal's health (events/health.py)
    join it to the subscriptions."""
    delivery: Any = queue.delivery
    return (
        select(
            delivery.subscription_id.label("sid"),
            func.count().label("n"),
            func.min(UserActionEvent.created_at).label("oldest"),
        )
        .join(UserActionEvent, UserActionEvent.id == delivery.event_id)
        .where(delivery.delivered.is_(False))
        .group_by(delivery.subscription_id)
        .subquery()
    )


async def backlog(conn: AsyncConnection, queue: AnyQueue) -> list[tuple[int, int, datetime | None]]:
    """Per subscription of ``queue``: its undelivered events and when the oldest of them
    happened (None when nothing is owed). Reads only undelivered rows (their index), not
    the week of delivered ones the full status counts: /metrics asks at every scrape."""
    sub: Any = queue.subscription
    pending = pending_by_subscription(queue)
    rows = (
        await conn.execute(
            select(sub.id, func.coalesce(pending.c.n, 0), pending.c.oldest)
            .outerjoin(pending, pending.c.sid == sub.id)
            .order_by(sub.id)
        )
    ).all()
    return [(int(r[0]), int(r[1]), r[2]) for r in rows]


async def mail_counts(conn: AsyncConnection) -> dict[str, int]:
    """The mail outbox: pending, sent (kept a week) and failing (pending, tried before)."""
    mail = (
        await conn.execute(
            select(
                func.coalesce(func.sum(case((MailMessage.sent.is_(False), 1), else_=0)), 0),
                func.coalesce(func.sum(case((MailMessage.sent.is_(True), 1), else_=0)), 0),
                func.coalesce(
                    func.sum(
                        case((MailMessage.sent.is_(False) & (MailMessage.attempts > 0), 1), else_=0)
                    ),
                    0,
                ),
            )
        )
    ).one()
    return {"pending": int(mail[0]), "sent": int(mail[1]), "failing": int(mail[2])}


async def collect(
    settings: Settings,
) -> tuple[list[dict[str, object]], dict[str, int], list[dict[str, object]]]:
    """AMQP subscriptions, the mail outbox, webhook subscriptions."""
    engine = create_engine(settings)
    try:
        async with engine.connect() as conn:
            subs = await _per_subscription(conn, AMQP)
            webhooks = await _per_subscription(conn, WEBHOOK)
            mail = await mail_counts(conn)
    finally:
        await engine.dispose()
    return subs, mail, webhooks


def _line(s: dict[str, object], prefix: str = "") -> str:
    state = "failing" if s["failing"] else "ok"
    detail = f"{s['next_attempt_at']} {s['last_error']}" if s["failing"] else ""
    return (
        f"{prefix}{s['subscription']:>12} {s['client']:>8} {s['pending']:>8} "
        f"{s['delivered']:>10} {state:<8} {detail}"
    )


async def print_status(settings: Settings, echo: Callable[[str], object]) -> None:
    subs, mail, webhooks = await collect(settings)
    echo(
        f"{'subscription':>12} {'client':>8} {'pending':>8} {'delivered':>10} "
        f"{'state':<8} next attempt / last error"
    )
    for s in subs:
        echo(_line(s))
    # Webhook lines are marked, so that their ids are not read as AMQP subscriptions'.
    for s in webhooks:
        echo(_line(s, "webhook "))
    echo(f"mail: {mail['pending']} pending ({mail['failing']} failing), {mail['sent']} sent")
