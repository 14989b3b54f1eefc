"""ApiRoute: the request owns one transaction (a read: none, see
create_read_sessionmaker); every authenticated request is logged.

Whether a route reads or writes is what its handler declares: a ``ReadSession`` or a
``WriteSession`` dependency (web/deps.py). A route that declares neither takes its
method's: GET and HEAD read, every other method writes (``transaction_mode``)."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.datastructures import DefaultPlaceholder
from fastapi.routing import APIRoute
from sqlalchemy.exc import DBAPIError
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from cloudadmin.auth.request_caller import presented_caller
from cloudadmin.db.request_db import ChangeDatabase, ReadDatabase, RequestDatabase
from cloudadmin.db.types import utcnow
from cloudadmin.errors import RequestTimeout, UnsupportedMediaType
from cloudadmin.web import idempotency
from cloudadmin.web.app_state import app_state
from cloudadmin.web.deps import get_caller, get_read_session, get_write_session
from cloudadmin.web.direct_call import direct_handler
from cloudadmin.web.error_render import render_exception
from cloudadmin.web.operation_ids import operation_id
from cloudadmin.web.query_model import QueryModel, query_model_parameters
from cloudadmin.web.query_rule import unknown_query_guard
from cloudadmin.web.request_log import LoggedRequest
from cloudadmin.web.text_guard import check_request_text

log = logging.getLogger("cloudadmin.request")

_BODY_METHODS = {"POST", "PUT", "PATCH"}


def _body_kind(route: APIRoute) -> str | None:
    field = route.body_field
    if field is None:
        return None
    info = field.field_info
    media = getattr(info, "media_type", "application/json")
    return "multipart" if media.startswith("multipart/") else "json"


def _check_content_type(request: Request, kind: str | None) -> None:
    if kind is None or request.method not in _BODY_METHODS:
        return
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "json":
        # A body without a content type is parsed as JSON, as FastAPI does.
        if ctype and ctype != "application/json" and not ctype.endswith("+json"):
            raise UnsupportedMediaType(
                f'Unsupported media type "{ctype}" in request; use application/json.'
            )
    elif ctype != "multipart/form-data":
        raise UnsupportedMediaType("Upload must be sent as multipart/form-data.")


def _authenticates(dependant: Any) -> bool:
    return any(d.call is get_caller or _authenticates(d) for d in dependant.dependencies)


def _calls(dependant: Any) -> set[Any]:
    calls = set()
    for dep in dependant.dependencies:
        calls.add(dep.call)
        calls |= _calls(dep)
    return calls


_READ_METHODS = {"GET", "HEAD"}


def transaction_mode(route: APIRoute) -> str:
    """ "read" or "write": what the handler declares (a ReadSession or a WriteSession
    among its dependencies), else its method's (GET and HEAD read)."""
    calls = _calls(route.dependant)
    reads, writes = get_read_session in calls, get_write_session in calls
    if reads and writes:
        raise TypeError(f"route {route.name} declares both a ReadSession and a WriteSession")
    if reads:
        if idempotency.idempotency_key in calls:
            # Its claim and stored answer need the request's transaction.
            raise TypeError(f"route {route.name} is a read: it cannot take Idempotency-Key")
        return "read"
    if writes:
        return "write"
    return "read" if (route.methods or set()) <= _READ_METHODS else "write"


class _DeadConnection(Exception):
    """The request's pooled database connection was found closed."""


def _is_dead_connection(exc: BaseException) -> bool:
    return isinstance(exc, DBAPIError) and exc.connection_invalidated


def describe(doc: str) -> str:
    """An operation's description from its handler's docstring: FastAPI's, with the
    wrapped lines of each paragraph joined, for the document's text has no line breaks
    of the source's."""
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(paragraph.replace("\n", " ") for paragraph in paragraphs)


def answers(status: int, description: str) -> dict[str, Any]:
    """A route's status code with its documented description, as keyword arguments of
    the route's decorator: ``@router.put(path, **answers(204, "Changed."))``."""
    return {"status_code": status, "responses": {status: {"description": description}}}


def _returns_nothing(endpoint: Callable[..., Any]) -> bool:
    """Declared ``-> None`` (the string "None" under ``from __future__ import annotations``)."""
    returns = getattr(endpoint, "__annotations__", {}).get("return", Ellipsis)
    return returns is None or returns == "None"


class ApiRoute(APIRoute):
    """The route of every API operation: one transaction a request (none for a read), and
    an activity-log row. A handler says each thing once: its docstring is the operation's
    description, ``-> None`` answers 204 (or the status its decorator names) with an empty
    body, and a query model (web/query_model.py) documents its own parameters."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **options: Any) -> None:
        # An operation is described by its handler's docstring (as FastAPI does).
        if options.get("description") is None and endpoint.__doc__:
            options["description"] = describe(endpoint.__doc__)
        # A handler that returns nothing answers 204 No Content unless its decorator names
        # another status, and no body at all: not a JSON null (nor a JSON content type).
        if _returns_nothing(endpoint):
            if options.get("status_code") is None:
                options["status_code"] = 204
            if isinstance(options.get("response_class"), DefaultPlaceholder):
                options["response_class"] = Response
        # Its operation id is the provider's (web/operation_ids.py), whichever router
        # holds it.
        if isinstance(options.get("generate_unique_id_function"), DefaultPlaceholder):
            options["generate_unique_id_function"] = operation_id
        super().__init__(path, endpoint, **options)
        # A query model (web/query_model.py) is documented as FastAPI documents Query().
        extra = self.openapi_extra or {}
        calls = [dependency.call for dependency in self.dependant.dependencies]
        models = [call.model for call in calls if isinstance(call, QueryModel)]
        if models and "parameters" not in extra:
            parameters = [p for model in models for p in query_model_parameters(model)]
            self.openapi_extra = {**extra, "parameters": parameters}

    @property
    def authenticates(self) -> bool:
        """Whether its caller is authenticated (get_caller): its requests are logged, and
        the OpenAPI document gives it the API key scheme (web/openapi.py)."""
        return _authenticates(self.dependant)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        solved = super().get_route_handler()
        direct = direct_handler(self, solved)
        # Whether its dependencies are awaited without FastAPI's solver (web/direct_call.py).
        self.calls_directly = direct is not None
        handle = direct or solved
        body_kind = _body_kind(self)
        refuse_unknown_query = unknown_query_guard(self, authenticates=self.authenticates)
        action = self.name
        # Its requests are logged, even one refused before its key was checked.
        logged = self.authenticates
        # A read runs without an explicit transaction; see create_read_sessionmaker.
        reads = transaction_mode(self) == "read"

        def open_database(app: Any) -> RequestDatabase:
            state = app_state(app)
            if reads:
                return ReadDatabase(state.read_engine, state.read_sessionmaker)
            return ChangeDatabase(state.sessionmaker)

        async def transactional_handler(request: Request) -> Response:
            requested_at = utcnow()
            # Before a turn and a connection are taken: a throttled caller, or a body
            # that trickles in, must not hold what every request waits for.
            try:
                state = app_state(request.app)
                await state.throttle.admit(request)
                if body_kind is not None and request.method in _BODY_METHODS:
                    await _read_body(request, state.settings.body_timeout_seconds)
            except ClientDisconnect:
                return Response(status_code=400)  # nobody is left to read an answer
            except Exception as exc:
                return render_exception(request, exc)
            try:
                return await attempt(request, requested_at, retry_dead_connection=reads)
            except _DeadConnection:
                # The pool has now dropped every connection older than the dead one
                # (the database restarted): a read runs once more on a fresh one.
                log.warning("database connection lost; the read runs once more")
                return await attempt(request, requested_at, retry_dead_connection=False)

        async def attempt(
            request: Request, requested_at: Any, *, retry_dead_connection: bool
        ) -> Response:
            async with app_state(request.app).turns.turn():
                db = open_database(request.app)
                try:
                    return await respond(
                        request, db, requested_at, retry_dead_connection=retry_dead_connection
                    )
                finally:
                    await db.close()

        async def respond(
            request: Request,
            db: RequestDatabase,
            requested_at: Any,
            *,
            retry_dead_connection: bool,
        ) -> Response:
            request.state.db = db
            try:
                # Inside the turn, so that a refusal of a valid key's request is logged.
                await refuse_unknown_query(request)
                _check_content_type(request, body_kind)
                await check_request_text(request, json_body=body_kind == "json")
                response = await handle(request)
            except idempotency.Replay as replay:  # a repeated Idempotency-Key
                response = replay.response
            except Exception as exc:
                if retry_dead_connection and _is_dead_connection(exc):
                    raise _DeadConnection from exc
                response = render_exception(request, exc)
            caller = getattr(request.state, "caller", None)
            committed = False
            if response.status_code < 400:
                try:
                    # The answer of an Idempotency-Key rides in the same transaction.
                    await idempotency.record(request, db, response)
                    if caller is not None:
                        # The log row rides in the request's own transaction.
                        log_request = app_state(request.app).request_log
                        row = LoggedRequest(
                            request,
                            caller,
                            action,
                            requested_at,
                            response.status_code,
                            reverted=False,
                        )
                        await log_request(await db.connection(), row)
                    await db.commit()
                    committed = True
                except Exception as exc:
                    response = render_exception(request, exc)
            if not committed:
                await db.rollback()
                await idempotency.release(request, db)
                if caller is not None or logged:
                    await _log_reverted(
                        db, request, caller, action, requested_at, response.status_code
                    )
            return response

        return transactional_handler


# Refusals of the key itself: nobody to log the request for.
_UNAUTHENTICATED = {401, 429}


async def _read_body(request: Request, seconds: float) -> None:
    """Reads the whole body (FastAPI then parses it from memory), or 408 when it has
    not arrived within ``seconds``."""
    try:
        async with asyncio.timeout(seconds):
            await request.body()
    except TimeoutError:
        # The rest of the body may still come: the connection cannot be reused.
        raise RequestTimeout(headers={"Connection": "close"}) from None


async def _log_reverted(
    db: RequestDatabase,
    request: Request,
    caller: Any,
    action: str,
    requested_at: Any,
    status: int,
) -> None:
    """Record a failed request after its rollback, in a transaction of its own on the
    request's own connection: a second pooled connection could wait for a pool whose
    every connection is held by requests doing the same. One refused before its key was
    checked is logged if that key is valid."""
    if caller is None and status in _UNAUTHENTICATED:
        return
    try:
        if caller is None:
            caller = await presented_caller(await db.connection(), request)
            if caller is None:
                return
        log_request = app_state(request.app).request_log
        row = LoggedRequest(request, caller, action, requested_at, status, reverted=True)
        await log_request(await db.connection(), row)
        await db.commit()
    except Exception:  # the log must never turn an answer into a 500
        log.exception("could not write the activity log entry")
