"""`cloudadmin serve --demo` and the Admin Portal (docs/portal.md, "Trying it"): the demo
prints the portal's address and one e-mail address and password per kind of person, and
each of them signs in (over HTTP, against the real process): the operator, the reseller
and the seller see the portal's start page, the client's user the page that says the
portal is not for client accounts. The API keys are printed as before (bench/fuzz.py
and tests/cli/test_demo.py read them)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from cloudadmin.demo.landscape import PASSWORD, PORTAL_PEOPLE
from tests.cli.test_demo import KINDS, data_dir, demo, demo_env  # noqa: F401 (fixtures)
from tests.portal.people import token_of

pytestmark = pytest.mark.slow

LINE = re.compile(r"^portal:\s+(operator|reseller|seller|client user)\s+(\S+@\S+)\s+(\S+)")


def printed_people(out: str) -> dict[str, tuple[str, str]]:
    found = {}
    for line in out.splitlines():
        match = LINE.match(line)
        if match:
            found[match.group(1)] = (match.group(2), match.group(3))
    return found


def sign_in(base: str, email: str, password: str) -> tuple[httpx.Response, httpx.Response]:
    """The sign-in form's answer, and the start page's after it."""
    with httpx.Client(base_url=base) as client:
        form = client.get("/portal/sign-in")
        assert form.status_code == 200, form.text
        data = {"email": email, "password": password, "csrf_token": token_of(form.text)}
        answer = client.post("/portal/sign-in", data=data)
        return answer, client.get("/portal/")


def test_the_demo_prints_the_portal_and_a_person_of_each_kind_who_signs_in(
    demo_env: dict[str, str],  # noqa: F811
    tmp_path: Path,
):
    with demo(demo_env, tmp_path / "logs") as started:
        out = started.out
        assert f"portal: the Admin Portal is at {started.base}/portal/" in out
        people = printed_people(out)
        assert set(people) == {"operator", "reseller", "seller", "client user"}, out
        assert {kind: email for kind, (email, _) in people.items()} == PORTAL_PEOPLE
        assert {password for _, password in people.values()} == {PASSWORD}
        # The keys are read as before: no portal line is taken for one.
        assert set(started.keys) == KINDS
        for kind, (email, password) in people.items():
            answer, home = sign_in(started.base, email, password)
            assert answer.status_code == 303, (kind, answer.text)
            if kind == "client user":
                assert home.status_code == 403, home.text
                assert "not part of the Admin Portal" in home.text
            else:
                assert home.status_code == 200, (kind, home.text)
                assert f"{email} ({kind})" in home.text
        # A wrong password is refused as for anyone.
        answer, _ = sign_in(started.base, PORTAL_PEOPLE["operator"], "not the password")
        assert answer.status_code == 401
