"""Waking the dispatcher when the outbox gets work, instead of polling for it.

A transaction that writes outbox rows (an event and its deliveries, a mail, a reset
backoff) calls :func:`outbox_written`. When it commits:

- on PostgreSQL its ``NOTIFY`` reaches every dispatcher LISTENing (:class:`Listener`),
  in any process;
- in this process, the dispatchers running here are woken directly (an asyncio event
  set after the commit): on SQLite, which has no notifications, that covers `serve`
  with its dispatcher inside, and on PostgreSQL it saves the round trip.

Anything else (a backoff or lease coming due, a write from a process that cannot
notify) is found by the dispatcher's fallback poll (events/waker.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from cloudadmin.db.dialect import asyncpg_connect_args, notify

log = logging.getLogger("cloudadmin.dispatcher")

CHANNEL = "cloudadmin_outbox"
_WRITTEN = "cloudadmin_outbox_written"

# The wake-up callbacks of the dispatchers running in this process.
_local: set[Callable[[], None]] = set()


async def outbox_written(session: AsyncSession) -> None:
    """Marks the session's transaction as one that gives the dispatcher work: it is
    woken once the transaction commits (not before, when the rows are not visible to
    it yet, and not at all when it rolls back)."""
    session.info[_WRITTEN] = True
    await notify(session, CHANNEL)


@event.listens_for(Session, "after_commit")
def _wake_after_commit(session: Session) -> None:
    if session.info.pop(_WRITTEN, False):
        wake_local()


@event.listens_for(Session, "after_soft_rollback")
def _forget_after_rollback(session: Session, _previous: Any) -> None:
    session.info.pop(_WRITTEN, None)


def wake_local() -> None:
    for callback in list(_local):
        callback()


def subscribe_local(wake: asyncio.Event) -> Callable[[], None]:
    """Sets ``wake`` (from any thread) whenever this process commits outbox rows;
    returns the function that unsubscribes."""
    loop = asyncio.get_running_loop()

    def callback() -> None:
        with contextlib.suppress(RuntimeError):  # its loop has closed
            loop.call_soon_threadsafe(wake.set)

    _local.add(callback)
    return lambda: _local.discard(callback)


class Listener:
    """One asyncpg connection of its own, LISTENing on the outbox channel: sets ``wake``
    on every notification. ``healthy`` is False until connected and after the
    connection is lost; the dispatcher polls more often meanwhile and calls
    :meth:`ensure` to connect again (notifications sent meanwhile are lost, so it
    looks at the outbox right after)."""

    def __init__(self, url: str, wake: asyncio.Event) -> None:
        self.url = url
        self.wake = wake
        self._conn: Any = None
        self._warned = False  # one line per outage, not one per attempt

    @property
    def healthy(self) -> bool:
        return self._conn is not None and not self._conn.is_closed()

    async def ensure(self) -> bool:
        """Connects and LISTENs unless already; True when it just did (the caller then
        looks for work it may have missed)."""
        if self.healthy:
            return False
        import asyncpg

        await self.close()
        try:
            conn = await asyncpg.connect(**asyncpg_connect_args(self.url), timeout=10)
            await conn.add_listener(CHANNEL, self._notified)
        except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
            if not self._warned:
                log.warning(
                    "dispatcher cannot LISTEN for outbox notifications (polling meanwhile): %s", exc
                )
                self._warned = True
            return False
        conn.add_termination_listener(lambda _conn: self.wake.set())
        self._conn = conn
        self._warned = False
        return True

    @property
    def server_pid(self) -> int | None:
        """The LISTENing connection's backend process (None while not connected)."""
        return int(self._conn.get_server_pid()) if self.healthy else None

    def _notified(self, *_args: Any) -> None:
        self.wake.set()

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and not conn.is_closed():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.close(), 5)
