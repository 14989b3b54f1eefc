"""web/route.py: a route reads or writes as its handler declares (ReadSession,
WriteSession); undeclared, as its method says."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import APIRouter, Depends

from cloudadmin.web.deps import CurrentCaller, ReadSession, Session, WriteSession
from cloudadmin.web.idempotency import Idempotent
from cloudadmin.web.route import ApiRoute, transaction_mode


def route(method: str, handler: Any, **options: Any) -> ApiRoute:
    router = APIRouter(route_class=ApiRoute)
    router.add_api_route("/r", handler, methods=[method], **options)
    [made] = router.routes
    assert isinstance(made, ApiRoute)
    return made


async def undeclared(session: Session) -> None: ...


async def reads(session: ReadSession, caller: CurrentCaller) -> None: ...


async def writes(session: WriteSession) -> None: ...


async def both(read: ReadSession, write: WriteSession) -> None: ...


async def reading_dependency(session: ReadSession) -> None: ...


async def keyed_read(session: ReadSession, idempotency: Idempotent) -> None: ...


class TestDeclared:
    def test_a_post_declaring_a_read_session_reads(self):
        assert transaction_mode(route("POST", reads)) == "read"

    def test_a_get_declaring_a_write_session_writes(self):
        assert transaction_mode(route("GET", writes)) == "write"

    def test_a_declaration_in_a_dependency_counts(self):
        async def handler(_: None = Depends(reading_dependency)) -> None: ...

        assert transaction_mode(route("PUT", handler)) == "read"

    def test_both_is_refused(self):
        with pytest.raises(TypeError, match="both"):
            transaction_mode(route("POST", both))

    def test_a_read_cannot_take_an_idempotency_key(self):
        with pytest.raises(TypeError, match="Idempotency-Key"):
            transaction_mode(route("POST", keyed_read))


class TestUndeclared:
    @pytest.mark.parametrize("method", ["GET", "HEAD"])
    def test_get_and_head_read(self, method: str):
        assert transaction_mode(route(method, undeclared)) == "read"

    @pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
    def test_other_methods_write(self, method: str):
        assert transaction_mode(route(method, undeclared)) == "write"
