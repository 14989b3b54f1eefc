"""The database of one request: a connection, and an ORM session on it when asked for.

A change (POST, PUT, PATCH, DELETE) runs in one transaction: its session is opened with
the request and committed or rolled back by ApiRoute. A read (GET) runs without an
explicit transaction (engine.create_read_sessionmaker): it gets a bare connection, and an
ORM session bound to that connection only if its handler asks for one. The busiest
reads (the addendum list, authentication, the activity-log row) use the connection
alone: opening, committing and closing a session they do not need cost about a fifth of
such a request's CPU (docs/architecture.md, "Statements on the driver connection").
"""

from __future__ import annotations

from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession


class RequestDatabase(Protocol):
    async def session(self) -> AsyncSession: ...

    async def connection(self) -> AsyncConnection: ...

    def bound_session(self) -> AsyncSession:
        """The session, opened now on the connection already checked out (a read's
        ``connection()`` was awaited first)."""

    async def commit(self) -> None: ...

    async def rollback(self) -> None: ...

    async def release(self) -> None:
        """Give the connection back to the pool now (its transaction rolled back); a
        later use checks one out again. A request holds one pooled connection at most."""

    async def close(self) -> None: ...


class ChangeDatabase:
    """A change's: one session, its transaction owned by the request."""

    def __init__(self, maker: Any) -> None:
        self._session: AsyncSession = maker()

    async def session(self) -> AsyncSession:
        return self._session

    async def connection(self) -> AsyncConnection:
        return await self._session.connection()

    def bound_session(self) -> AsyncSession:
        return self._session

    async def commit(self) -> None:
        await self._session.commit()

    async def rollback(self) -> None:
        await self._session.rollback()

    async def release(self) -> None:
        await self._session.close()  # the session may be used again

    async def close(self) -> None:
        await self._session.close()


class ReadDatabase:
    """A read's: a connection checked out on first use, a session on it on first use.
    Every statement commits on its own, so commit and rollback have nothing to do at
    the database; they only end the session's bookkeeping."""

    def __init__(self, engine: AsyncEngine, maker: Any) -> None:
        self._engine = engine
        self._maker = maker
        self._conn: AsyncConnection | None = None
        self._session: AsyncSession | None = None

    async def session(self) -> AsyncSession:
        if self._session is None:
            self._session = self._maker(bind=await self.connection())
        return self._session

    def bound_session(self) -> AsyncSession:
        if self._session is None:
            if self._conn is None:
                raise RuntimeError(
                    "a read's session is bound to its connection: check it out first"
                )
            self._session = self._maker(bind=self._conn)
        return self._session

    async def connection(self) -> AsyncConnection:
        if self._conn is None:
            self._conn = await self._engine.connect()
        return self._conn

    async def commit(self) -> None:
        if self._session is not None:
            await self._session.commit()

    async def rollback(self) -> None:
        if self._session is not None:
            await self._session.rollback()

    async def release(self) -> None:
        await self.close()

    async def close(self) -> None:
        session, conn = self._session, self._conn
        self._session = self._conn = None
        try:
            if session is not None:
                await session.close()
        finally:
            if conn is not None:
                await conn.close()
