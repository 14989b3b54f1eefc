"""`cloudadmin events status`: what the outbox holds, per subscription."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import case, func, select

from cloudadmin.config import Settings
from cloudadmin.db.engine import create_engine
from cloudadmin.db.models import AmqpSubscription, DeliveryState, EventDelivery, MailMessage
from cloudadmin.kit.timeparse import isoformat_z


async def collect(settings: Settings) -> tuple[list[dict[str, object]], dict[str, int]]:
    engine = create_engine(settings)
    try:
        async with engine.connect() as conn:
            pending = func.sum(case((EventDelivery.delivered.is_(False), 1), else_=0))
            delivered = func.sum(case((EventDelivery.delivered.is_(True), 1), else_=0))
            rows = (
                await conn.execute(
                    select(
                        AmqpSubscription.id, AmqpSubscription.client_id,
                        func.coalesce(pending, 0), func.coalesce(delivered, 0),
                        DeliveryState.attempts, DeliveryState.next_attempt_at,
                        DeliveryState.last_error,
                    )
                    .outerjoin(EventDelivery, EventDelivery.subscription_id == AmqpSubscription.id)
                    .outerjoin(DeliveryState,
                               DeliveryState.subscription_id == AmqpSubscription.id)
                    .group_by(AmqpSubscription.id, AmqpSubscription.client_id,
                              DeliveryState.attempts, DeliveryState.next_attempt_at,
                              DeliveryState.last_error)
                    .order_by(AmqpSubscription.id)
                )
            ).all()
            mail = (
                await conn.execute(
                    select(
                        func.coalesce(func.sum(case((MailMessage.sent.is_(False), 1),
                                                    else_=0)), 0),
                        func.coalesce(func.sum(case((MailMessage.sent.is_(True), 1),
                                                    else_=0)), 0),
                        func.coalesce(func.sum(case(
                            (MailMessage.sent.is_(False) & (MailMessage.attempts > 0), 1),
                            else_=0)), 0),
                    )
                )
            ).one()
    finally:
        await engine.dispose()
    subs = [
        {
            "subscription": r[0], "client": r[1], "pending": int(r[2]), "delivered": int(r[3]),
            "failing": bool(r[4]), "attempts": r[4] or 0,
            "next_attempt_at": isoformat_z(r[5]) if r[5] else None, "last_error": r[6],
        }
        for r in rows
    ]
    return subs, {"pending": int(mail[0]), "sent": int(mail[1]), "failing": int(mail[2])}


async def print_status(settings: Settings, echo: Callable[[str], object]) -> None:
    subs, mail = await collect(settings)
    echo(f"{'subscription':>12} {'client':>8} {'pending':>8} {'delivered':>10} "
         f"{'state':<8} next attempt / last error")
    for s in subs:
        state = "failing" if s["failing"] else "ok"
        detail = f"{s['next_attempt_at']} {s['last_error']}" if s["failing"] else ""
        echo(f"{s['subscription']:>12} {s['client']:>8} {s['pending']:>8} {s['delivered']:>10} "
             f"{state:<8} {detail}")
    echo(f"mail: {mail['pending']} pending ({mail['failing']} failing), {mail['sent']} sent")
