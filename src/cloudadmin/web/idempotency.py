"""Idempotent retries: a creating POST sent with an ``Idempotency-Key`` runs once.

An endpoint opts in by taking the key, ``idempotency: Idempotent``, and handing it to its
service, which claims it (``await idempotency.claim()``) once the caller has passed every check
(authentication, role, the API token's role, tenancy) and before it changes anything.
A repeat is thus answered only to a caller who would be let through now: one who
lacks the role gets the 403 or 404 it gets without a key, never the stored answer. The
claim runs in a short transaction of its own on the request's session: one row per
(account, key), holding a hash of the request and of the credential that sent it (the
API token and the role it acts with). Then:

- the key is new (or expired, or its claim was abandoned): the service goes on in the
  request's transaction, and ApiRoute stores the answer in the claim row (``record``)
  in that same transaction, so an answer is never kept without its change or the
  change without its answer; a request that fails is rolled back and its claim
  deleted (``release``), so that a retry runs again;
- the key answered the same request from the same credential: the stored answer is
  replayed (``Replay``), with ``Idempotent-Replayed: true``, and nothing changes;
- the key belongs to another request (or another token, or the token's role changed):
  422; its first request still runs: 409.

A keyed request whose handler succeeded without claiming its key is a bug of that
endpoint: it is refused with 500 and undone, never committed uncovered by its key.

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
from sqlalchemy import delete, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.responses import Response

from cloudadmin.auth.caller import Caller
from cloudadmin.db import dialect
from cloudadmin.db.base import table_of
from cloudadmin.db.models.idempotency import IdempotencyKey
from cloudadmin.db.results import rows_matched
from cloudadmin.db.types import utcnow
from cloudadmin.errors import Conflict, Unprocessable
from cloudadmin.kit.crypto import SecretBox
from cloudadmin.web.app_state import app_state
from cloudadmin.web.deps import CurrentCaller

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
    """What a repeat must match: the user, the credential (the API token and the role it
    acts with now), method, path, query and body. A JSON body is compared by content, so
    a client that serialises it again still matches. Another token of the same user, or
    the same token after its role changed, never gets this request's stored answer."""
    if body and _is_json(request):
        # An invalid body is compared as sent (FastAPI answers 400 anyway).
        with contextlib.suppress(ValueError):
            body = json.dumps(
                json.loads(body), sort_keys=True, separators=(",", ":"), ensure_ascii=False
            ).encode()
    digest = hashlib.sha256()
    credential = (
        f"{caller.key_id}:{int(caller.superuser)}:{','.join(map(str, sorted(caller.group_ids)))}"
    )
    for part in (
        str(caller.user_id),
        credential,
        request.method,
        request.url.path,
        request.url.query,
    ):
        digest.update(part.encode())
        digest.update(b"\0")
    digest.update(body)
    return digest.hexdigest()


def _is_json(request: Request) -> bool:
    ctype = request.headers.get("content-type", "application/json").split(";")[0].strip()
    return ctype == "application/json" or ctype.endswith("+json")


class KeyClaim:
    """The request's ``Idempotency-Key`` (if it sent one), for its service to claim once
    the caller has passed every check and before the change (``claim``)."""

    __slots__ = ("_account_id", "_key", "_request", "_request_hash")

    def __init__(
        self, request: Request, account_id: int, key: str | None, request_hash: str
    ) -> None:
        self._request = request
        self._account_id = account_id
        self._key = key
        self._request_hash = request_hash

    async def claim(self) -> None:
        """Claim the key, or raise Replay (the stored answer of the same request from the
        same credential), Unprocessable (another request) or Conflict (still running).
        Without a key: nothing. Called by the service after its checks of the caller:
        role, the API token's role and tenancy are thus checked on every repeat, for the
        caller as it is now. Commits what the request has done so far (its reads)."""
        if self._key is None:
            return
        key, self._key = self._key, None  # claimed once, whatever the outcome
        request = self._request
        request.state.idempotency_unclaimed = False
        state = app_state(request.app)
        box: SecretBox = state.secret_box
        request.state.idempotency = await claim(
            await request.state.db.session(),
            self._account_id,
            key,
            self._request_hash,
            ttl=timedelta(hours=state.settings.idempotency_ttl_hours),
            unseal=lambda sealed: box.decrypt(sealed.decode()).encode(),
        )


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
            "the same body, by the same user with the same API token, within "
            "`CLOUDADMIN_IDEMPOTENCY_TTL_HOURS` (default 24 h), answers the first answer again "
            f"(with `{REPLAYED_HEADER}: true`) and creates nothing. A repeat is checked as "
            "a new request is (authentication, role, the token's role, the account) before "
            "it is answered. The same key with another body, path or token answers 422; a "
            "repeat while the first request still runs answers 409. Keys are kept per "
            "account; any string of 1-255 characters, e.g. a UUID.",
        ),
    ] = None,
) -> KeyClaim:
    if key is None:
        return KeyClaim(request, caller.account_id, None, "")
    # A keyed request must reach its claim: record() refuses a success that did not.
    request.state.idempotency_unclaimed = True
    return KeyClaim(
        request, caller.account_id, key, fingerprint(request, caller, await request.body())
    )


# Taken by a creating endpoint and handed to its service, which claims it after its
# checks: ``async def create_x(..., idempotency: Idempotent)`` ... ``await idempotency.claim()``.
Idempotent = Annotated[KeyClaim, Depends(idempotency_key)]


async def _secret_answer(request: Request) -> None:
    request.state.idempotency_sealed = True


# Declared beside an Idempotent key by an endpoint whose answer holds a secret shown
# once (an API token): its stored answer is kept encrypted (SecretBox), never in clear.
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

    The session's transaction so far (the caller's authentication, the service's
    checks: reads) is committed first: on SQLite that lets go of the write lock before
    the change begins, on PostgreSQL the claim is visible before the change begins.
    """
    now = now or utcnow()
    where = (_c.account_id == account_id, _c.idempotency_key == key)
    # ON CONFLICT DO NOTHING rather than a unique violation: a rollback would expire the
    # ORM objects the service loaded for its checks before it claimed the key.
    if_new = dialect.upsert(session.get_bind().dialect.name, _table, ())
    await session.commit()
    for _ in range(_ATTEMPTS):
        token = secrets.token_hex(16)
        # What a claim writes, into a new row or over an expired one.
        claim = {"request_hash": request_hash, "claim": token, "created_at": now}
        await _purge(session, now - ttl)
        inserted = await session.execute(
            if_new.values(account_id=account_id, idempotency_key=key, **claim)
        )
        await session.commit()
        if rows_matched(inserted) == 1:
            return Held(account_id, key, token)
        # Taken (PostgreSQL: after waiting for a concurrent claim to commit).
        row = (await session.execute(select(_table).where(*where))).one_or_none()
        await session.commit()
        if row is None:
            continue  # released since: claim it afresh
        if row.created_at > now - ttl:
            if row.request_hash != request_hash:
                raise Unprocessable(
                    f"This {HEADER} was used for another request (another body, path, "
                    "user or API token); use a new key for a new request."
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
        if getattr(request.state, "idempotency_unclaimed", False):
            # The endpoint's service never claimed the key: its change would be
            # committed without what protects it from a repeat. A bug, not the caller's.
            raise RuntimeError(f"{request.url.path} changed without claiming its {HEADER}")
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
                "body, path, user or API token)",
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
