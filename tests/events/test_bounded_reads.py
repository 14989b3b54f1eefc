"""Every read of what a destination sends has a bound: a webhook receiver's answer, a mail
server's greeting and answers, a broker's frames. Each far end here is a real loopback
server that never stops sending (tests/events/floods.py); what it managed to send, the
bytes the service read or holds in its socket, is the measure, not the time taken."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

import pytest
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import MailMessage
from cloudadmin.db.types import utcnow
from cloudadmin.events.amqp import COULD_NOT_CONNECT as NO_BROKER
from cloudadmin.events.amqp import BrokerPool, PublishError
from cloudadmin.events.dispatcher import Dispatcher
from cloudadmin.events.mail import COULD_NOT_CONNECT as NO_MAIL_SERVER
from cloudadmin.events.mail import enqueue
from cloudadmin.events.webhooks import COULD_NOT_CONNECT
from cloudadmin.web.app_state import app_state
from tests.events.floods import CAP, ReturningBroker, flood
from tests.events.test_mail import configure_mail
from tests.events.test_webhooks import act, make_webhook, pending, state_of
from tests.factories import Landscape
from tests.waiting import until

# What a bounded reader lets a flooding server send: the piece it read, plus what the
# sockets' buffers hold on both sides (a few hundred KiB on loopback). A reader without
# a bound takes everything, up to the server's CAP of 64 MiB.
BOUND = 4 * 1024 * 1024
assert BOUND < CAP

OK_CHUNKED = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
CHUNK = b"1000\r\n" + b"x" * 4096 + b"\r\n"
OK_HUGE = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000000000000\r\n\r\n"


@pytest.fixture
async def dispatcher(app: FastAPI) -> AsyncIterator[Dispatcher]:
    # A short outbound timeout: the code without a bound reads until it runs out.
    outbound = dataclasses.replace(app_state(app).outbound, timeout=3.0)
    d = Dispatcher(app_state(app).engine, app_state(app).secret_box, outbound=outbound)
    yield d
    await d.webhooks.close()
    await d.brokers.close()


class TestWebhookAnswers:
    @pytest.mark.parametrize(
        ("answer", "chunk"),
        [(OK_CHUNKED, CHUNK), (OK_HUGE, b"x" * 65536)],
        ids=["endless-chunked-body", "huge-content-length"],
    )
    async def test_a_200_with_an_endless_body_is_a_delivery_and_read_only_a_little(
        self,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        dispatcher: Dispatcher,
        answer: bytes,
        chunk: bytes,
    ) -> None:
        with flood(answer, chunk, ask=1) as receiver:
            sid = await make_webhook(
                session,
                app_state(app).secret_box,
                ls.client_account,
                f"http://127.0.0.1:{receiver.port}/hook",
            )
            await act(session, ls.client_account, 2)
            assert await dispatcher.deliver_once() is True
            await until(lambda: receiver.settled(1), "the answer to end")
            assert max(receiver.sent) <= BOUND, f"the receiver sent {receiver.sent} bytes"
            state = await state_of(session, sid)
            assert (state.attempts, state.last_error) == (0, None)  # the status line decides
            assert await pending(session) == 0
            # Each answer cut off: its connection closed, never reused.
            await until(lambda: receiver.settled(2), "both answers to end")
            assert receiver.ended == [True, True]

    async def test_endless_headers_fail_the_delivery_and_are_read_only_so_far(
        self,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        dispatcher: Dispatcher,
    ) -> None:
        header = b"X-Filler: " + b"a" * 1000 + b"\r\n"
        with flood(b"HTTP/1.1 200 OK\r\n", header, ask=1) as receiver:
            sid = await make_webhook(
                session,
                app_state(app).secret_box,
                ls.client_account,
                f"http://127.0.0.1:{receiver.port}/hook",
            )
            await act(session, ls.client_account)
            assert await dispatcher.deliver_once() is True
            state = await state_of(session, sid)
            assert (state.attempts, state.last_error) == (1, COULD_NOT_CONNECT)
            assert await pending(session) == 1
            await until(lambda: receiver.settled(1), "the answer to end")
            assert receiver.total <= BOUND, f"the receiver sent {receiver.total} bytes"


class TestMailServerAnswers:
    @pytest.mark.parametrize(
        ("greeting", "prefix", "chunk", "ask"),
        [
            (b"", b"220 ", b"x" * 4096, 0),
            (b"", b"", b"220-hello\r\n" * 400, 0),
            (b"220 mail.example\r\n", b"250-", b"x" * 4096, 1),
        ],
        ids=["endless-greeting-line", "endless-greeting-lines", "endless-answer-to-ehlo"],
    )
    async def test_an_endless_answer_fails_the_mail_which_is_kept_for_later(
        self,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        dispatcher: Dispatcher,
        greeting: bytes,
        prefix: bytes,
        chunk: bytes,
        ask: int,
    ) -> None:
        with flood(prefix, chunk, greeting=greeting, ask=ask) as server:
            reseller_id = ls.reseller_account.id
            await configure_mail(session, app, ls, server.port)
            await enqueue(
                session, kind="deletion_request", reseller_id=reseller_id, subject="s", body="b"
            )
            await session.commit()
            assert await dispatcher.send_mail_once() is True
            await until(lambda: server.settled(1), "the answer to end")
            assert server.total <= BOUND, f"the mail server sent {server.total} bytes"
            mail = (
                await session.execute(select(MailMessage).execution_options(populate_existing=True))
            ).scalar_one()
            session.expunge(mail)  # read as it is now
            await session.rollback()
            assert (mail.sent, mail.attempts) == (False, 1)  # tried again later
            assert mail.last_error == f"127.0.0.1:{server.port}: {NO_MAIL_SERVER}"
            assert mail.next_attempt_at > utcnow()


class TestBrokerFrames:
    async def test_a_frame_claiming_gigabytes_ends_the_connection_unread(
        self, app: FastAPI
    ) -> None:
        # Answers the protocol header with a frame header that claims 4 GiB, then streams.
        with flood(b"\x01\x00\x00\xff\xff\xff\xff", b"\x00" * 65536, ask=8) as broker:
            pool = BrokerPool(dataclasses.replace(app_state(app).outbound, timeout=3.0))
            try:
                with pytest.raises(PublishError) as failed:
                    await pool.publish(
                        f"amqp://guest:guest@127.0.0.1:{broker.port}/", None, "q", [("m", {})]
                    )
            finally:
                await pool.close()
            await until(lambda: broker.settled(1), "the frame to end")
            assert broker.total <= BOUND, f"the broker sent {broker.total} bytes"
            assert str(failed.value) == f"127.0.0.1:{broker.port}: {NO_BROKER}"

    async def test_a_returned_message_claiming_gigabytes_ends_the_connection_unread(
        self, app: FastAPI
    ) -> None:
        # A broker that returns the message published with a body it says is 10 GB long.
        broker = ReturningBroker(size=10 * 1024**3)
        pool = BrokerPool(dataclasses.replace(app_state(app).outbound, timeout=3.0))
        try:
            with pytest.raises(PublishError):
                await pool.publish(
                    f"amqp://guest:guest@127.0.0.1:{broker.port}/", None, "q", [("m", {"n": 1})]
                )
            await until(
                lambda: broker.settled(1), lambda: f"the body to end: {broker.sent} {broker.ended}"
            )
            assert broker.total <= BOUND, f"the broker sent {broker.total} bytes"
        finally:
            await pool.close()
            broker.close()
