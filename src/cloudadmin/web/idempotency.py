"""Idempotent retries: a creating POST sent with an ``Idempotency-Key`` runs once.

An endpoint opts in with ``dependencies=[IDEMPOTENT]``. The dependency (after the
caller's authentication, so the account is known) claims the key in a short
transaction of its own on the request's session: one row per (account, key), holding
a hash of the request. Then:

- the key is new (or expired, or its claim was abandoned): the handler runs in the
  request's transaction, and ApiRoute stores the answer in the claim row (``record``)
  in that same transaction, so an answer is never kept without its change or the
  change without its answer; a request that fails is rolled back and its claim
  deleted (``release``), so that a retry runs again;
- the key answered the same request: the stored answer is replayed (``Replay``), with
  ``Idempotent-Replayed: true``, and nothing runs;
- the key belongs to another request: 422; its first request still runs: 409.

Every statement runs on the request's own session: a request never holds two pooled
connections. See docs/errors.md, "Idempotent retries".
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any

from fastapi import Depends, Header, Request
from sqlalchemy import delete, insert, select, tuple_, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.responses import Response

from cloudadmin.auth.app_state import app_state
from cloudadmin.auth.caller import Caller
from cloudadmin.auth.deps import CurrentCaller
from cloudadmin.db.base import table_of
from cloudadmin.db.models.idempotency import IdempotencyKey
from cloudadmin.db.results import rows_matched
from cloudadmin.db.types import utcnow
from cloudadmin.errors import Conflict, Unprocessable
from cloudadmin.kit.crypto import SecretBox

log = logging.getLogger("cloudadmin.idempotency")

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
# A claim still running after this long belongs to a request that died (a crash, a
# cancelled task): a retry may take the key over. Far above any request's duration.
LEASE_SECONDS = 60
_STILL_RUNNING = f"A request with this {HEADER} is still running; retry once it has answered."
# Expired keys deleted per claim: enough to keep up with any claim rate, small enough
# that a claim stays one short statement.
PURGE_BATCH = 100
# Marks a stored answer kept encrypted (SECRET_ANSWER).
_SEALED = b"sealed:"
# Claims tried before giving up with 409 (each retry follows a concurrent release or
# takeover of the same key, which does not happen twice in a row in practice).
_ATTEMPTS = 3

_table = table_of(IdempotencyKey)
_c = _table.c


@dataclass(frozen=True, slots=True)
class Held:
    """The key this request holds while it runs (``request.state.idempotency``)."""

    account_id: int
    key: str
    claim: str


class Replay(Exception):  # noqa: N818 (not an error: the answer to send)
    """The stored answer to a repeated request; ApiRoute sends it as the handler's."""

    def __init__(self, response: Response) -> None:
        super().__init__("idempotent replay")
        self.response = response


def fingerprint(request: Request, caller: Caller, body: bytes) -> str:
    """What a repeat must match: the user, method, path, query and body. A JSON body
    is compared by content, so a client that serialises it again still matches."""
    if body and _is_json(request):
        # An invalid body is compared as sent (FastAPI answers 400 anyway).
        with contextlib.suppress(ValueError):
            body = json.dumps(
                json.loads(body), sort_keys=True, separators=(",", ":"), ensure_ascii=False
            ).encode()
    digest = hashlib.sha256()
    for part in (str(caller.user_id), request.method, request.url.path, request.url.query):
        digest.update(part.encode())
        digest.update(b"\0")
    digest.update(body)
    return digest.hexdigest()


def _is_json(request: Request) -> bool:
    ctype = request.headers.get("content-type", "application/json").split(";")[0].strip()
    return ctype == "application/json" or ctype.endswith("+json")


async def idempotency_key(
    request: Request,
    caller: CurrentCaller,
    key: Annotated[
        str | None,
        Header(
            alias=HEADER,
            min_length=1,
            max_length=255,
            description="Makes a retry of this request safe: a repeat with the same key and "
            "the same body, by the same user, within "
            "`CLOUDADMIN_IDEMPOTENCY_TTL_HOURS` (default 24 h), answers the first answer again "
            f"(with `{REPLAYED_HEADER}: true`) and creates nothing. The same key with "
            "another body or path answers 422; a repeat while the first request still runs "
            "answers 409. Keys are kept per account; any string of 1-255 characters, e.g. "
            "a UUID.",
        ),
    ] = None,
) -> None:
    if key is None:
        return
    session: AsyncSession = await request.state.db.session()
    ttl = timedelta(hours=app_state(request.app).settings.idempotency_ttl_hours)
    box: SecretBox = app_state(request.app).secret_box
    request.state.idempotency = await claim(
        session,
        caller.account_id,
        key,
        fingerprint(request, caller, await request.body()),
        ttl=ttl,
        unseal=lambda sealed: box.decrypt(sealed.decode()).encode(),
    )


# Declared by a creating endpoint: ``@router.post(..., dependencies=[IDEMPOTENT])``.
IDEMPOTENT: Any = Depends(idempotency_key)


async def _secret_answer(request: Request) -> None:
    request.state.idempotency_sealed = True


# Declared beside IDEMPOTENT by an endpoint whose answer holds a secret shown once (an
# API token): its stored answer is kept encrypted (SecretBox), never in clear.
SECRET_ANSWER: Any = Depends(_secret_answer)


async def claim(
    session: AsyncSession,
    account_id: int,
    key: str,
    request_hash: str,
    *,
    ttl: timedelta,
    now: datetime | None = None,
    unseal: Callable[[bytes], bytes] | None = None,
) -> Held:
    """Claim ``key`` for this request, committed at once so that concurrent requests
    (any process) see it; or raise Replay, Unprocessable or Conflict.

    The session's transaction so far (the caller's authentication, a read) is
    committed first: on SQLite that lets go of the write lock while the handler has
    not started, on PostgreSQL the claim is visible before the change begins.
    """
    now = now or utcnow()
    where = (_c.account_id == account_id, _c.idempotency_key == key)
    await session.commit()
    for _ in range(_ATTEMPTS):
        token = secrets.token_hex(16)
        # What a claim writes, into a new row or over an expired one.
        claim = {"request_hash": request_hash, "claim": token, "created_at": now}
        try:
            await _purge(session, now - ttl)
            await session.execute(
                insert(_table).values(account_id=account_id, idempotency_key=key, **claim)
            )
            await session.commit()
            return Held(account_id, key, token)
        except IntegrityError:
            # Taken (PostgreSQL: after waiting for a concurrent claim to commit).
            await session.rollback()
        row = (await session.execute(select(_table).where(*where))).one_or_none()
        await session.commit()
        if row is None:
            continue  # released since: claim it afresh
        if row.created_at > now - ttl:
            if row.request_hash != request_hash:
                raise Unprocessable(
                    f"This {HEADER} was used for another request (another body, path or "
                    "user); use a new key for a new request."
                )
            if row.status_code is not None:
                raise Replay(_stored_response(row, unseal))
            if row.created_at > now - timedelta(seconds=LEASE_SECONDS):
                raise Conflict(_STILL_RUNNING)
        # Expired, or abandoned by a request that died: take it over, unless another
        # retry did so first (the claim changed).
        taken = await session.execute(
            update(_table)
            .where(*where, _c.claim == row.claim)
            .values(**claim, status_code=None, content_type=None, body=None)
        )
        await session.commit()
        if rows_matched(taken) == 1:
            return Held(account_id, key, token)
    raise Conflict(_STILL_RUNNING)


async def _purge(session: AsyncSession, cutoff: datetime) -> None:
    """Delete a bounded batch of expired keys. Rows another request is deleting or
    taking over are skipped (PostgreSQL; SQLite has one writer), so purges never wait
    on each other."""
    expired = (
        select(_c.account_id, _c.idempotency_key)
        .where(_c.created_at <= cutoff)
        .order_by(_c.created_at)
        .limit(PURGE_BATCH)
        .with_for_update(skip_locked=True)
    )
    await session.execute(
        delete(_table).where(tuple_(_c.account_id, _c.idempotency_key).in_(expired))
    )


def _stored_response(row: Any, unseal: Callable[[bytes], bytes] | None = None) -> Response:
    body = row.body
    if body is not None and body.startswith(_SEALED) and unseal is not None:
        body = unseal(body[len(_SEALED) :])
    return Response(
        content=body,
        status_code=row.status_code,
        media_type=row.content_type,
        headers={REPLAYED_HEADER: "true"},
    )


def _held(request: Request) -> Held | None:
    return getattr(request.state, "idempotency", None)


async def record(request: Request, db: Any, response: Response) -> None:
    """Store the answer of the request holding a key, in the request's transaction
    (ApiRoute calls this before the commit of a successful request)."""
    held = _held(request)
    if held is None:
        return
    session: AsyncSession = await db.session()
    mine = (
        _c.account_id == held.account_id,
        _c.idempotency_key == held.key,
        _c.claim == held.claim,
    )
    body = getattr(response, "body", None)
    if isinstance(body, bytes) and getattr(request.state, "idempotency_sealed", False):
        box: SecretBox = app_state(request.app).secret_box
        body = _SEALED + box.encrypt(body.decode()).encode()
    if isinstance(body, bytes):
        result = await session.execute(
            update(_table)
            .where(*mine)
            .values(
                status_code=response.status_code,
                content_type=response.headers.get("content-type"),
                body=body,
            )
        )
    else:  # a streamed answer cannot be stored: a retry will run again
        result = await session.execute(delete(_table).where(*mine))
    if rows_matched(result) != 1:
        # A retry took the key over (this request outlived the lease): only one of the
        # two may make the change.
        raise Conflict(f"A retry with this {HEADER} has taken over; this attempt is undone.")


async def release(request: Request, db: Any) -> None:
    """Drop the claim of a request that failed (after its rollback), so a retry runs
    again. Best effort: a claim left behind is taken over after the lease."""
    held = _held(request)
    if held is None:
        return
    request.state.idempotency = None
    try:
        session: AsyncSession = await db.session()
        await session.execute(
            delete(_table).where(
                _c.account_id == held.account_id,
                _c.idempotency_key == held.key,
                _c.claim == held.claim,
            )
        )
        await session.commit()
    except Exception:
        log.warning("could not release an idempotency key", exc_info=True)
        try:
            await db.rollback()
        except Exception:
            log.debug("rollback after a failed release failed too", exc_info=True)


_ERROR = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def document(schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAPI: the 409 and 422 of every operation taking the header, and the replay
    header on its success."""
    for item in schema.get("paths", {}).values():
        for op in item.values():
            if not isinstance(op, dict):
                continue
            names = {p.get("name") for p in op.get("parameters", [])}
            if HEADER not in names:
                continue
            responses = op.setdefault("responses", {})
            running = f"A request with the same {HEADER} is still running"
            if "409" in responses:
                responses["409"]["description"] += f"; or: {running[0].lower()}{running[1:]}"
            else:
                responses["409"] = {"description": running, **_ERROR}
            responses["422"] = {
                "description": f"The {HEADER} was used for another request (another "
                "body, path or user)",
                **_ERROR,
            }
            for code, answer in responses.items():
                if code.startswith("2"):
                    answer.setdefault("headers", {})[REPLAYED_HEADER] = {
                        "description": "`true` on an answer replayed for a repeated "
                        f"{HEADER}; absent otherwise.",
                        "schema": {"type": "string", "enum": ["true"]},
                    }
    return schema
