"""Changing the secret key (docs/operations.md, "Rotating the secret key"): secrets
stored under key A; `cloudadmin rotate-secrets` with B current and A old; the service
started again with B alone reads every one of them. On both databases."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import httpx
import pytest
from pydantic import SecretStr
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.app import create_app
from cloudadmin.config import Settings
from cloudadmin.db.engine import create_engine
from cloudadmin.db.models import AmqpSubscription, Branding, WebhookSubscription
from cloudadmin.db.models.events import MailMessage
from cloudadmin.db.models.idempotency import IdempotencyKey
from cloudadmin.db.models.instance import InstanceMark
from cloudadmin.db.secret_rotation import KINDS, rotate_secrets
from cloudadmin.events.mail import SEALED_KINDS, enqueue_invitation
from cloudadmin.kit.crypto import SecretBox
from cloudadmin.web.app_state import app_state
from tests.cli.commands import environment, run_async
from tests.factories import auth, landscape, make_client, next_id

KEY_A = "test-secret-key"  # conftest's: the app of the `client` fixture stores under it
KEY_B = "the-new-secret-key-b"
ACCOUNTS = 5  # AMQP and webhook subscriptions, one per account; batches of 2 below
PLAIN_MAIL = "Someone failed to sign in as ops@example.com."


class Stored:
    """The plain secrets arranged, by kind, to compare with what decrypts later."""

    def __init__(self) -> None:
        self.amqp: dict[int, str] = {}
        self.webhooks: dict[int, str] = {}
        self.branding: dict[int, str] = {}
        self.answers: dict[str, str] = {}
        self.marks: dict[str, str] = {}
        self.mails: dict[str, str] = {}  # the bodies of unsent mails, by recipient


@pytest.fixture
async def stored(session: AsyncSession, app: object) -> Stored:
    """Secrets of every kind, encrypted by the app's own secret box (key A)."""
    box = app_state(app).secret_box  # type: ignore[arg-type]
    made = Stored()
    ls = await landscape(session)
    now = datetime.now(UTC)
    for n in range(ACCOUNTS):
        account = await make_client(session, reseller_id=ls.reseller_account.id)
        made.amqp[account.id] = f"amqp://user{n}:broker-pass-{n}@mq{n}.example:5672/%2F"
        made.webhooks[account.id] = f"Bearer hook-secret-{n}"
        session.add_all(
            [
                AmqpSubscription(
                    id=next_id(),
                    client_id=account.id,
                    connection_string_encrypted=box.encrypt(made.amqp[account.id]),
                    exchange="events",
                ),
                WebhookSubscription(
                    id=next_id(),
                    client_id=account.id,
                    url=f"https://hooks{n}.example/in",
                    auth_header_name="Authorization",
                    auth_header_value_encrypted=box.encrypt(made.webhooks[account.id]),
                ),
                IdempotencyKey(
                    account_id=account.id,
                    idempotency_key=f"key-{n}",
                    request_hash="0" * 64,
                    claim="c",
                    created_at=now,
                    status_code=201,
                    content_type="application/json",
                    body=b"sealed:" + box.encrypt(f'{{"answer": {n}}}').encode(),
                ),
            ]
        )
        made.answers[f"key-{n}"] = f'{{"answer": {n}}}'
    made.branding[ls.reseller_account.id] = "smtp-pass-1"
    session.add(
        Branding(
            reseller_id=ls.reseller_account.id,
            mail_server={"host": "smtp.example", "port": 587, "username": "u"},
            mail_password_encrypted=box.encrypt("smtp-pass-1"),
        )
    )
    # An invitation waiting in the outbox holds its set-password link encrypted; a plain
    # mail beside it is not a secret and stays as it is.
    invitation = await enqueue_invitation(
        session,
        box,
        reseller_id=ls.reseller_account.id,
        recipient="invited@example.com",
        company="Acme",
        brand=None,
        link="https://panel.example/set-password?token=the-link-token",
        valid_hours=24,
    )
    made.mails["invited@example.com"] = box.decrypt(invitation.body)
    made.mails["ops@example.com"] = PLAIN_MAIL
    session.add(
        MailMessage(
            kind="failed_login",
            reseller_id=ls.reseller_account.id,
            recipients=["ops@example.com"],
            subject="Failed sign-in",
            body=PLAIN_MAIL,
            created_at=now,
            next_attempt_at=now,
            attempts=0,
            sent=False,
        )
    )
    made.marks["demo"] = json.dumps({"operator": "1_x"})
    session.add(InstanceMark(name="demo", value=box.encrypt(made.marks["demo"])))
    await session.commit()
    return made


async def decrypted(session: AsyncSession, box: SecretBox) -> Stored:
    """Every stored secret decrypted with ``box`` (ValueError where it cannot)."""
    found = Stored()
    for cid, token in await session.execute(
        select(AmqpSubscription.client_id, AmqpSubscription.connection_string_encrypted)
    ):
        found.amqp[cid] = box.decrypt(token)
    for cid, token in await session.execute(
        select(WebhookSubscription.client_id, WebhookSubscription.auth_header_value_encrypted)
    ):
        found.webhooks[cid] = box.decrypt(token)
    for rid, token in await session.execute(
        select(Branding.reseller_id, Branding.mail_password_encrypted)
    ):
        found.branding[rid] = box.decrypt(token)
    for key, body in await session.execute(
        select(IdempotencyKey.idempotency_key, IdempotencyKey.body)
    ):
        found.answers[key] = box.decrypt(body.removeprefix(b"sealed:").decode())
    for name, token in await session.execute(select(InstanceMark.name, InstanceMark.value)):
        found.marks[name] = box.decrypt(token)
    for kind, recipients, body in await session.execute(
        select(MailMessage.kind, MailMessage.recipients, MailMessage.body)
    ):
        found.mails[recipients[0]] = box.decrypt(body) if kind in SEALED_KINDS else body
    await session.rollback()  # an open transaction on SQLite holds the write lock
    return found


def rotation_env(tmp_path: object, database_url: str, **more: str) -> dict[str, str]:
    return environment(
        tmp_path,  # type: ignore[arg-type]
        database_url=database_url,
        secret_key=KEY_B,
        secret_keys_old=f"some-older-key, {KEY_A}",
        **more,
    )


@pytest.fixture
async def app_with_b_alone(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """The service started again with key B and no old key."""
    started = settings.model_copy(update={"secret_key": SecretStr(KEY_B), "secret_keys_old": []})
    assert started.secret_keys() == [KEY_B]
    engine = create_engine(started)
    application = create_app(started, engine=engine)
    transport = httpx.ASGITransport(app=application)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
            yield c
    finally:
        await engine.dispose()


def same(left: Stored, right: Stored) -> bool:
    return vars(left) == vars(right)


async def test_rotate_then_restart_without_the_old_key(
    stored: Stored,
    session: AsyncSession,
    database_url: str,
    tmp_path: object,
    app_with_b_alone: httpx.AsyncClient,
) -> None:
    with pytest.raises(ValueError):
        await decrypted(session, SecretBox(KEY_B))
    await session.rollback()
    owner = next(iter(stored.amqp))
    sid = await session.scalar(
        select(AmqpSubscription.id).where(AmqpSubscription.client_id == owner)
    )
    await session.rollback()
    operator_key = await _operator_key(session)
    read = f"/cloud/v1/user_actions/amqp_subscriptions/{sid}"
    # Before the rotation, B alone does not open what A encrypted.
    r = await app_with_b_alone.get(read, headers=auth(operator_key))
    assert r.status_code == 500, r.text

    done = await run_async(
        rotation_env(tmp_path, database_url), "rotate-secrets", "--batch-size", "2"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"amqp subscription connection strings: {ACCOUNTS} re-encrypted, 0 already under the "
        "current key",
        f"webhook authorization headers: {ACCOUNTS} re-encrypted, 0 already under the current key",
        "branding mail server passwords: 1 re-encrypted, 0 already under the current key",
        f"idempotent answers: {ACCOUNTS} re-encrypted, 0 already under the current key",
        "unsent mails holding a link: 1 re-encrypted, 0 already under the current key",
        "two-factor sign-in secrets: 0 re-encrypted, 0 already under the current key",
        "instance marks: 1 re-encrypted, 0 already under the current key",
    ]
    output = done.stdout + done.stderr
    secrets = [*stored.amqp.values(), *stored.webhooks.values(), "smtp-pass-1", "the-link-token"]
    for secret in [*secrets, KEY_A, KEY_B]:
        assert secret not in output

    # Key A is gone: everything decrypts under B alone, to what was stored.
    assert same(await decrypted(session, SecretBox(KEY_B)), stored)
    # ... and the service started with B alone reads the secrets: an AMQP subscription's
    # connection string is decrypted to be shown (password masked).
    r = await app_with_b_alone.get(read, headers=auth(operator_key))
    assert r.status_code == 200, r.text
    assert r.json()["connection_string"].startswith("amqp://user0:")

    # A second run finds everything under the current key and changes nothing.
    again = await run_async(rotation_env(tmp_path, database_url), "rotate-secrets")
    assert again.returncode == 0, again.stderr
    assert f"{ACCOUNTS} already under the current key" in again.stdout.splitlines()[0]
    assert all(" 0 re-encrypted" in line for line in again.stdout.splitlines())


async def _operator_key(session: AsyncSession) -> str:
    from cloudadmin.db.models import User
    from cloudadmin.iam.api_tokens.service import issue_key

    user = (await session.execute(select(User).where(User.superuser.is_(True)))).scalars().first()
    assert user is not None
    _, key = await issue_key(session, user, name="rotation test")
    await session.commit()
    return key


class Interrupted(Exception):
    pass


async def test_a_run_cut_off_is_resumed(
    stored: Stored, session: AsyncSession, settings: Settings, database_url: str, tmp_path: object
) -> None:
    box = SecretBox(KEY_B, KEY_A)
    batches: list[tuple[str, int]] = []

    def cut_after_the_second(kind: str, rows: int) -> None:
        batches.append((kind, rows))
        if len(batches) == 2:
            raise Interrupted

    engine = create_engine(settings)
    try:
        with pytest.raises(Interrupted):
            await rotate_secrets(engine, box, batch_size=2, after_batch=cut_after_the_second)
    finally:
        await engine.dispose()
    assert batches == [(KINDS[0].name, 2), (KINDS[0].name, 2)]

    done = await run_async(
        rotation_env(tmp_path, database_url), "rotate-secrets", "--batch-size", "2"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == (
        "amqp subscription connection strings: 1 re-encrypted, 4 already under the current key"
    )
    assert same(await decrypted(session, SecretBox(KEY_B)), stored)


async def test_a_secret_no_key_opens_is_reported_and_kept(
    stored: Stored, session: AsyncSession, database_url: str, tmp_path: object
) -> None:
    foreign = SecretBox("a-key-nobody-has").encrypt("lost")
    session.add(InstanceMark(name="foreign", value=foreign))
    await session.commit()

    done = await run_async(rotation_env(tmp_path, database_url), "rotate-secrets")
    assert done.returncode == 1
    assert done.stdout.splitlines()[-1] == (
        "instance marks: 1 re-encrypted, 0 already under the current key, 1 not decryptable "
        "with any key (rows foreign)"
    )
    assert done.stderr.splitlines()[-1] == (
        "error: some stored secrets decrypt with no key given; they are left as they were"
    )
    kept = await session.scalar(select(InstanceMark.value).where(InstanceMark.name == "foreign"))
    await session.rollback()
    assert kept == foreign
    assert same(await _without_foreign(session, SecretBox(KEY_B)), stored)


async def _without_foreign(session: AsyncSession, box: SecretBox) -> Stored:
    await session.execute(InstanceMark.__table__.delete().where(InstanceMark.name == "foreign"))
    await session.commit()
    return await decrypted(session, box)
