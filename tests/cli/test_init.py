"""`cloudadmin init`: the operator of a new database (its account, its user with a
password, an API key printed once) without a hand-written document; refused where
there is an operator."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import Client, User
from cloudadmin.kit.crypto import verify_password
from tests.cli.commands import environment, run, run_async

PASSWORD = "correct horse battery staple"
EMAIL = "root@operator.example"


def init_args(password_file: str = "-", *extra: str) -> list[str]:
    return ["init", "--email", EMAIL, "--password-file", password_file, *extra]


async def test_the_key_works_and_the_password_verifies(
    database_url: str, app: object, client: httpx.AsyncClient, session: AsyncSession, tmp_path
) -> None:
    env = environment(tmp_path, database_url=database_url, secret_key="test-secret-key")
    done = await run_async(env, *init_args(), stdin=f"{PASSWORD}\n")
    assert done.returncode == 0, done.stderr
    assert PASSWORD not in done.stdout + done.stderr
    key = done.stdout.strip()  # the key, alone on stdout
    assert "\n" not in key
    assert done.stderr.splitlines()[1].startswith(f"operator: user 1 ({EMAIL}) of account 1")

    superuser, active, password_hash, account_id = (
        await session.execute(
            select(User.superuser, User.is_active, User.password_hash, User.client_id).where(
                User.email == EMAIL
            )
        )
    ).one()
    account = (
        await session.execute(
            select(Client.client_type, Client.email).where(Client.id == account_id)
        )
    ).one()
    await session.rollback()  # an open transaction on SQLite holds the write lock
    assert superuser and active and password_hash
    assert verify_password(password_hash, PASSWORD)
    assert not verify_password(password_hash, "wrong")
    assert tuple(account) == ("reseller", EMAIL)

    auth = {"Authorization": f"apikey {key}"}
    me = await client.get("/iam/users/1", headers=auth)
    assert me.status_code == 200, me.text
    assert me.json()["email"] == EMAIL
    # Only an operator or a reseller lists sellers.
    assert (await client.get("/iam/admin/sellers", headers=auth)).status_code == 200

    again = await run_async(env, *init_args(), stdin=f"{PASSWORD}\n")
    assert again.returncode == 1
    assert again.stderr.splitlines()[1:] == [
        f"error: the database has an operator already ({EMAIL}): init makes the first one "
        "only; use `cloudadmin apikey create` for a key"
    ]
    assert again.stdout == ""
    count = await session.scalar(select(User.id).where(User.superuser.is_(True)))
    await session.rollback()
    assert count == 1


def test_password_from_a_file_and_problems_in_one_line(tmp_path: Path) -> None:
    env = environment(tmp_path, database_url=f"sqlite:///{tmp_path}/init.db")
    assert run(env, "migrate").returncode == 0
    secret = tmp_path / "password"

    secret.write_text("")
    empty = run(env, *init_args(str(secret)))
    assert (empty.returncode, empty.stderr) == (2, "error: the password is empty\n")

    absent = run(env, *init_args(str(tmp_path / "nothing")))
    assert absent.returncode == 2
    assert absent.stderr.startswith("error: cannot read ")

    secret.write_text(f"{PASSWORD}\n")
    invalid = run(env, "init", "--email", "not-an-email", "--password-file", str(secret))
    assert invalid.returncode == 1
    assert [line for line in invalid.stderr.splitlines() if line.startswith("error: ")]
    assert "Traceback" not in invalid.stderr

    done = run(env, *init_args(str(secret), "--company", "Acme Platform"))
    assert done.returncode == 0, done.stderr
    assert PASSWORD not in done.stdout + done.stderr


def test_without_a_terminal_or_file_it_asks_for_one(tmp_path: Path) -> None:
    env = environment(tmp_path, database_url=f"sqlite:///{tmp_path}/init.db")
    assert run(env, "migrate").returncode == 0
    done = run(env, "init", "--email", EMAIL)
    assert (done.returncode, done.stderr) == (
        2,
        "error: no terminal to ask for the password on: give --password-file\n",
    )


@pytest.mark.slow
def test_asks_twice_on_a_terminal_without_echo(tmp_path: Path) -> None:
    env = environment(tmp_path, database_url=f"sqlite:///{tmp_path}/init.db")
    assert run(env, "migrate").returncode == 0
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cloudadmin", "init", "--email", EMAIL],
        env=env,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        close_fds=True,
    )
    os.close(slave)
    seen = b""

    def read_until(text: bytes) -> None:
        nonlocal seen
        deadline = time.monotonic() + 60
        while text not in seen:
            assert time.monotonic() < deadline, seen.decode(errors="replace")
            seen += os.read(master, 4096)

    try:
        read_until(b"Password: ")
        os.write(master, f"{PASSWORD}\n".encode())
        read_until(b"Repeat for confirmation: ")
        os.write(master, f"{PASSWORD}\n".encode())
        read_until(b"shown this once")
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the command closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        assert proc.wait(timeout=60) == 0, seen.decode(errors="replace")
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert PASSWORD.encode() not in seen
    assert seen.strip().splitlines()[-1].decode().startswith("1_")
