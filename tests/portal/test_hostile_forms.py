"""No page ever answers 500 (docs/portal.md, "A page's request"): the API's hostile
inputs (tests/web/test_hostile_input.py: NUL, lone surrogates, numbers past 64 bits;
tests/web/test_hostile_bodies.py: deep nesting; bench/fuzz.py's generated text: huge
strings, odd numbers; and SQL-ish and HTML/script text) sent through the portal's forms.

Every POST route of the portal is walked from the application (tests/portal/crawl.py),
as an operator, a reseller, a seller and signed out. Its form is found on the page that
shows it (the route's own path, a parent's, or any page the walk reaches). Each hostile
value goes into all its fields at once, a field is given twice, no field at all and
bodies that are not a form. And each value goes into each field in turn, the other
fields holding what the page shows or a plausible value, so that it gets past the others'
checks to the service and the database: every value as an operator and signed out
(whoever a route is open to); as a reseller and a seller, whose forms are the operator's
parsed by the same code, the two that reach the most checks (SQL and markup text, a
number past 64 bits into an id that the service looks up within the caller's tenants).
The GET forms (filters) and the query parameters of the pages' links get the same values.
Every answer: below 500, the security headers, and no script text echoed unescaped.

The suite sends one value of each class (SAMPLE: bad text, size, markup and SQL, numbers,
dates, nesting, header injection, nothing), field by field the two that reach the most
checks, through the forms as an operator and signed out; the thorough walk (marked
``thorough``, run by CI after the suite: .ci/run) sends every value as every kind.
"""

from __future__ import annotations

import itertools
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession

from tests.portal.crawl import (
    SKIPPED,
    Form,
    Route,
    Tenants,
    arrange_tenants,
    fill,
    header_problems,
    new_client,
    parse,
    path_of,
    portal_router_routes,
    route_of,
    routes_with,
    signed_in,
    walk,
)
from tests.portal.people import PASSWORD, sign_in, token_of

NUL = "\u0000"
SURROGATE = "\ud800"
SCRIPT = '<script>alert("portal-hostile")</script>'
ATTRIBUTE = '"><img src=x onerror=alert("portal-hostile")>'
TEMPLATE = '{{ "jinja" ~ "-evaluated" }}{% if true %}jinja-statement{% endif %}'
# What must never be in an answer: the script and attribute unescaped, a template run.
ECHOED = ('<script>alert("portal-hostile")', "<img src=x onerror", "jinja-evaluated")

# What gets past a form's own checks to the service and the database: each goes into
# each field of each form in turn, the others holding plausible values.
MARKUP = f"{ATTRIBUTE}{SCRIPT}{TEMPLATE}' OR '1'='1' --; DROP TABLE clients; --"
EACH_FIELD = {
    "markup and SQL": MARKUP,
    "2**63": str(2**63),
    "forty nines": "9" * 40,
    "-1": "-1",
    "just under the form's limit": "\u00e9" * 9_999,
}
# And these in all fields at once (a form refuses most of them as a whole).
ALL_FIELDS = {
    **EACH_FIELD,
    "NUL": f"x{NUL}y",
    "lone surrogate": f"x{SURROGATE}y",
    "huge": "x" * 100_000,
    "script": SCRIPT,
    "attribute": ATTRIBUTE,
    "template": TEMPLATE,
    "deep nesting": "[" * 10_000 + "]" * 10_000,
    "-2**63-1": str(-(2**63) - 1),
    "2**64": str(2**64),
    "0": "0",
    "1e309": "1e309",
    "NaN": "NaN",
    "-Infinity": "-Infinity",
    "hex": "0x1F",
    "underscores": "1_000",
    "padded number": " 7 ",
    "fraction": "0.1",
    "year 99999": "99999-12-31",
    "bad date": "0000-00-00T25:61:61Z",
    "deep JSON": '{"a":' * 5_000 + "1" + "}" * 5_000,
    "LIKE wildcards": "%_\\%",
    "CRLF": "a\r\nBcc: hostile@example.com",
    "right-to-left": "\u202egnp.exe",
    "emoji": "\U0001f984" * 2_000,
    "empty": "",
    "spaces": "   ",
    "pipe and path": "../../etc/passwd|ls",
}
# In a query string (an address is at most some kilobytes: no huge values there).
QUERY_VALUES = {
    label: ALL_FIELDS[label]
    for label in (
        "NUL", "lone surrogate", "markup and SQL", "2**63", "-2**63-1", "forty nines", "-1",
        "0", "1e309", "NaN", "year 99999", "bad date", "LIKE wildcards", "empty",
    )
} | {"long": "x" * 1_500, "nesting": "[" * 700 + "]" * 700}  # fmt: skip


# One value of each class of ALL_FIELDS and QUERY_VALUES: what the suite sends.
SAMPLE = {
    "NUL", "lone surrogate", "huge", "markup and SQL", "2**64", "1e309", "bad date",
    "deep JSON", "CRLF", "empty", "2**63", "long",
}  # fmt: skip


# Plausible values for the fields a page shows empty, by name or type, so that the
# hostile one gets past the others' checks to the service and the database.
PLAUSIBLE = {
    "email": "hostile.{n}@example.com",
    "mail": "hostile.{n}@example.com",
    "password": "A long enough passw0rd, {n}",
    "phone": "+352 20 30 40",
    "country": "LU",
    "url": "https://example.com/{n}",
    "website": "https://example.com/{n}",
    "domain": "hostile{n}.example.com",
    "date": "2026-01-01",
    "month": "2026-01",
    "number": "1",
    "name": "Hostile {n}",
}
# Posted when a route's form is on no page the walk reaches.
COMMON_FIELDS = ["name", "email", "id", "confirm"]


@pytest.fixture
async def tenants(session: AsyncSession) -> Tenants:
    return await arrange_tenants(session)


counter = itertools.count()


def plausible(form: Form, name: str, shown: str) -> str:
    if shown:
        return shown
    n = next(counter)
    kind = form.kinds.get(name, "text")
    if kind in PLAUSIBLE:
        return PLAUSIBLE[kind].format(n=n)
    for key, value in PLAUSIBLE.items():
        if key in name.lower():
            return value.format(n=n)
    return f"text {n}"


def encoded(pairs: list[tuple[str, str]]) -> bytes:
    """A form body; a lone surrogate goes as its UTF-8-style bytes, as a broken client
    would send it (httpx would refuse to encode it)."""
    return "&".join(
        f"{quote(k, safe='', errors='surrogatepass')}={quote(v, safe='', errors='surrogatepass')}"
        for k, v in pairs
    ).encode()


# Settings.max_json_body_bytes, which bounds a form too: a longer body is a 413.
BODY_LIMIT = 1_048_576
FORM_TYPE = {"Content-Type": "application/x-www-form-urlencoded"}


class Findings:
    """What went wrong, by request: a 5xx, missing headers, echoed script."""

    def __init__(self) -> None:
        self.found: dict[str, list[str]] = {}
        self.sent = 0

    def check(self, where: str, r: httpx.Response) -> None:
        self.sent += 1
        problems = []
        if r.status_code >= 500:
            problems.append(f"answered {r.status_code}")
        problems += header_problems(r)
        text = r.text if r.headers.get("content-type", "").startswith("text/") else ""
        problems += [f"echoed {marker!r} unescaped" for marker in ECHOED if marker in text]
        if problems:
            self.found.setdefault(where, []).extend(problems)

    def summary(self) -> dict[str, list[str]]:
        return {where: sorted(set(p)) for where, p in self.found.items()}


def post_forms(pages: list[tuple[str, Any]]) -> dict[str, list[Form]]:
    """The POST forms of the pages (each: its path, its parsed page), by the path they
    post to."""
    found: dict[str, list[Form]] = {}
    for _, parsed in pages:
        for form in parsed.forms:
            if form.method == "post":
                found.setdefault(urlsplit(form.action).path, []).append(form)
    return found


async def opened(client: httpx.AsyncClient, paths: list[str]) -> list[tuple[str, Any]]:
    pages = []
    for path in paths:
        r = await client.get(path)
        if r.status_code < 400 and r.headers.get("content-type", "").startswith("text/html"):
            pages.append((path, parse(r.text, str(r.url))))
    return pages


def parents(path: str) -> list[str]:
    """/portal/a/1/delete: itself, /portal/a/1, /portal/a (where its form would be)."""
    parts = path.rstrip("/").split("/")
    return ["/".join(parts[:n]) or "/" for n in range(len(parts), 2, -1)]


class Sender:
    """A client of one kind that posts, signed in (``email``) or not (None: the pages
    before a session, whose forms carry a token of their own); signed in again when a
    change ended its session (a password changed, the other sessions ended)."""

    def __init__(self, app: FastAPI, email: str | None, findings: Findings) -> None:
        self.app, self.email, self.findings = app, email, findings
        self.client = new_client(app, "198.51.100.90")
        self.token = ""

    async def start(self) -> None:
        if self.email is not None:
            self.token = await sign_in(self.client, self.email)

    async def alive(self) -> None:
        if self.email is None:
            return
        r = await self.client.get("/portal/")
        if r.status_code != 200:
            await self.client.aclose()
            self.client = new_client(self.app, "198.51.100.90")
            await self.start()
        else:
            self.token = token_of(r.text)

    async def post(
        self, where: str, path: str, content: bytes, headers: dict[str, str]
    ) -> httpx.Response:
        r = await self.client.post(path, content=content, headers=headers)
        self.findings.check(where, r)
        return r

    async def form(self, where: str, path: str, pairs: list[tuple[str, str]]) -> httpx.Response:
        body = encoded([("csrf_token", self.token), *pairs])
        return await self.post(where, path, body, FORM_TYPE)


def sampled(values: dict[str, str]) -> dict[str, str]:
    """The suite's sample of ``values``: one of each class."""
    return {label: value for label, value in values.items() if label in SAMPLE}


def distinct(forms: list[Form]) -> list[Form]:
    """One form of each set of fields (a list's row forms are one form many times)."""
    seen: dict[frozenset[str], Form] = {}
    for form in forms:
        seen.setdefault(frozenset(form.fields), form)
    return list(seen.values())


async def hostile_posts(
    sender: Sender,
    route: Route,
    path: str,
    forms: list[Form],
    *,
    field_by_field: list[str],
    all_fields: dict[str, str],
) -> None:
    """``all_fields`` through the route's form(s) in all fields at once, and the values
    labelled ``field_by_field`` in each field in turn. A route closed to the sender (it
    answers a plausible form with the 404 page or the sign-in page) gets a few only."""
    if not forms:
        form = Form(action=path, method="post")
        form.fields = {name: [""] for name in COMMON_FIELDS}
        forms = [form]
    for form in distinct(forms):
        fields = [name for name in form.fields if name != "csrf_token"]
        if sender.email is None and "csrf_token" in form.fields:
            sender.token = form.fields["csrf_token"][0]  # a page before the session's
        shown = {name: plausible(form, name, form.values().get(name, "")) for name in fields}
        first = await sender.form(f"POST {route.path} as shown", path, list(shown.items()))
        # Closed to this sender: the 404 page, or the sign-in page for one signed out.
        sign_in_page = first.headers.get("location", "").startswith("/portal/sign-in")
        closed = first.status_code == 404 or (first.status_code == 303 and sign_in_page)
        each = {} if closed else {label: EACH_FIELD[label] for label in field_by_field}
        every = (
            {k: ALL_FIELDS[k] for k in ("NUL", "huge", "markup and SQL")} if closed else all_fields
        )
        for name in fields:
            for label, value in each.items():
                pairs = [(k, value if k == name else v) for k, v in shown.items()]
                await sender.form(f"POST {route.path} {name}={label}", path, pairs)
        for label, value in every.items():
            # Within the body limit (past it: test_a_body_past_the_limit_...).
            value = value[: BODY_LIMIT // 3 // max(len(fields), 1)]
            await sender.form(
                f"POST {route.path} every field={label}", path, [(k, value) for k in fields]
            )
        if not closed:
            twice = [*shown.items(), *((name, SCRIPT) for name in fields)]
            await sender.form(f"POST {route.path} each field twice", path, twice)
            await sender.form(f"POST {route.path} no field", path, [])
            await sender.form(f"POST {route.path} an unknown field", path, [("x" * 1000, "1")])
        await sender.alive()
    headers = {"X-CSRF-Token": sender.token}
    raw = [
        ("deep JSON body", b"[" * 100_000, "application/json"),
        ("broken escapes", b"%zz&&==&%ff%fe=%c0%af", FORM_TYPE["Content-Type"]),
        (
            "broken multipart",
            b"--x\r\nContent-Disposition: form-data\r\n\r\n",
            "multipart/form-data; boundary=y",
        ),
        ("invalid UTF-8", b"name=\xff\xfe\xc0\xaf", FORM_TYPE["Content-Type"]),
    ]
    for label, body, ctype in raw:
        await sender.post(
            f"POST {route.path} {label}", path, body, {**headers, "Content-Type": ctype}
        )
    await sender.alive()


# The values each kind's forms get field by field (the module's docstring says why).
REACHING_MOST = ["markup and SQL", "2**63"]
FIELD_BY_FIELD = {
    "operator": list(EACH_FIELD),
    "signed out": list(EACH_FIELD),
    "reseller": REACHING_MOST,
    "seller": REACHING_MOST,
}

# The suite's sample, or every value (CI's thorough walk).
EVERY_VALUE = pytest.param(True, id="every value", marks=pytest.mark.thorough)
SAMPLED = pytest.param(False, id="sample")

# Every POST route but signing in (below) and out, named for the test's id.
POST_ROUTES = [
    r
    for r in portal_router_routes()
    if "POST" in r.methods and r.name not in ("sign_in", "sign_out")
]


# The suite's sample: an operator, whose forms are the others' (the reseller's and the
# seller's refusals of what is not theirs: test_generic_rules.py, TestTenancy), and one
# signed out; the thorough walk: every kind.
def walks(sampled_as: tuple[str, ...], kinds: tuple[str, ...]) -> list[Any]:
    """(every, kind) parameters: the suite's sample as ``sampled_as``, every value
    (marked thorough) as each of ``kinds``."""
    return [
        *(pytest.param(False, kind, id=f"{kind}-sample") for kind in sampled_as),
        *(
            pytest.param(True, kind, id=f"{kind}-every value", marks=pytest.mark.thorough)
            for kind in kinds
        ),
    ]


@pytest.mark.parametrize(
    ("every", "kind"),
    walks(("operator", "signed out"), ("operator", "reseller", "seller", "signed out")),
)
@pytest.mark.parametrize("route", POST_ROUTES, ids=[r.name for r in POST_ROUTES])
async def test_a_post_route_takes_hostile_form_input(
    app: FastAPI, tenants: Tenants, kind: str, route: Route, every: bool
):
    assert route in routes_with(app, "POST")
    findings = Findings()
    email = None if kind == "signed out" else tenants.people.emails[kind]
    sender = Sender(app, email, findings)
    await sender.start()
    try:
        path = tenants.path(route)
        # Its own page or a parent's (where a form usually is); else any page reached.
        forms = post_forms(await opened(sender.client, parents(path))).get(path)
        if forms is None:
            visits = await walk(sender.client, limit=40)
            forms = post_forms([(v.path, v.parsed) for v in visits]).get(path, [])
        await hostile_posts(
            sender,
            route,
            path,
            forms,
            field_by_field=FIELD_BY_FIELD[kind] if every else REACHING_MOST,
            all_fields=ALL_FIELDS if every else sampled(ALL_FIELDS),
        )
    finally:
        await sender.client.aclose()
    assert findings.sent > 0
    assert findings.summary() == {}, findings.summary()


@pytest.mark.parametrize("every", [SAMPLED, EVERY_VALUE])
async def test_the_sign_in_form_takes_hostile_input(app: FastAPI, tenants: Tenants, every: bool):
    findings = Findings()
    async with new_client(app, "198.51.100.77") as client:
        for label, value in (ALL_FIELDS if every else sampled(ALL_FIELDS)).items():
            for field in ("email", "password", "next"):
                page = await client.get("/portal/sign-in")
                pairs = {"email": "nobody@example.com", "password": "wrong", field: value}
                body = encoded([("csrf_token", token_of(page.text)), *pairs.items()])
                r = await client.post("/portal/sign-in", content=body, headers=FORM_TYPE)
                findings.check(f"POST /portal/sign-in {field}={label}", r)
    assert findings.summary() == {}, findings.summary()


# The browser resolves a dot segment: /portal/../iam/users is /iam/users.
@pytest.mark.parametrize(
    "target",
    [
        "//hostile.example/",
        "https://hostile.example/portal/",
        "/\\hostile.example",
        "/portal/../iam/users",
        "/portal/%2e%2e/iam/users",
        "javascript:alert(1)",
        f"/portal/{SCRIPT}",
        "/portal/%0d%0aSet-Cookie:%20x=1",
    ],
)
async def test_signing_in_never_leaves_the_portal(app: FastAPI, tenants: Tenants, target: str):
    # The sign-in form's `next` is only ever a path of the portal (docs/portal.md).
    async with new_client(app, "198.51.100.78") as client:
        page = await client.get("/portal/sign-in")
        data = {
            "csrf_token": token_of(page.text),
            "email": tenants.people.emails["operator"],
            "password": PASSWORD,
            "next": target,
        }
        r = await client.post("/portal/sign-in", data=data)
    assert r.status_code == 303
    location = r.headers["location"]
    assert location.startswith("/portal/") and not location.startswith("//"), location
    assert "\\" not in location and "\r" not in location and "\n" not in location
    segments = unquote(location.split("?")[0]).split("/")
    assert ".." not in segments and "<script" not in location


@pytest.mark.parametrize(
    ("every", "kind"), walks(("operator",), ("operator", "reseller", "seller"))
)
async def test_no_page_fails_on_hostile_query_values(
    app: FastAPI, tenants: Tenants, kind: str, every: bool
):
    """The GET forms (filters, searches) and the query parameters of the pages' links,
    each given each hostile value."""
    findings = Findings()
    async with new_client(app) as client:
        await sign_in(client, tenants.people.emails[kind])
        visits = await walk(client)
        keys: dict[str, set[str]] = {}
        for visit in visits:
            here = urlsplit(visit.path).path
            for form in visit.parsed.forms:
                if form.method == "get":
                    keys.setdefault(urlsplit(form.action).path, set()).update(form.fields)
            for href in visit.parsed.links:
                target = urlsplit(href)
                if target.query and (not target.path or target.path.startswith("/portal/")):
                    names = {pair.split("=")[0] for pair in target.query.split("&")}
                    keys.setdefault(target.path or here, set()).update(names)
        # One address of each route (the rows of a list are one page many times).
        routes = routes_with(app, "GET")
        chosen: dict[str, tuple[str, set[str]]] = {}
        for path, names in sorted(keys.items()):
            if not SKIPPED.search(path):
                route = route_of(routes, path)
                _, known = chosen.setdefault(route.path if route else path, (path, set()))
                known.update(names)
        for path, names in sorted(chosen.values()):
            for name in sorted(names):
                for label, value in (QUERY_VALUES if every else sampled(QUERY_VALUES)).items():
                    query = f"{quote(name)}={quote(value, safe='', errors='surrogatepass')}"
                    r = await client.get(f"{path}?{query}")
                    findings.check(f"GET {path}?{name}={label}", r)
    assert findings.summary() == {}, findings.summary()


async def test_a_body_past_the_limit_gets_the_portal_headers(app: FastAPI, tenants: Tenants):
    findings = Findings()
    async with signed_in(app, tenants.people.emails["operator"]) as (client, token):
        body = encoded([("csrf_token", token), ("name", "x" * (BODY_LIMIT + 1))])
        r = await client.post("/portal/profile", content=body, headers=FORM_TYPE)
        findings.check("POST /portal/profile past the body limit", r)
    assert r.status_code == 413
    assert findings.summary() == {}, findings.summary()


def test_the_findings_catch_what_they_look_for():
    findings = Findings()
    findings.check("a", httpx.Response(500, headers={"content-type": "text/html"}, text=SCRIPT))
    assert findings.summary()["a"] == sorted(
        {"answered 500", "no Content-Security-Policy", f"echoed {ECHOED[0]!r} unescaped"}
    )
    assert parents("/portal/accounts/5/delete") == [
        "/portal/accounts/5/delete",
        "/portal/accounts/5",
        "/portal/accounts",
    ]
    assert fill("/portal/a/{x}/{yy}", len) == "/portal/a/1/2"
    assert path_of("http://testserver/portal/a?b=1") == "/portal/a?b=1"
    form = Form(action="/portal/x", method="post", kinds={"email": "email", "n": "number"})
    assert plausible(form, "email", "").endswith("@example.com")
    assert plausible(form, "n", "") == "1"
    assert plausible(form, "company_name", "").startswith("Hostile")
    assert isinstance(encoded([("a", SURROGATE)]), bytes)
    # The sample names values that exist, in both lists.
    assert not SAMPLE - set(ALL_FIELDS) - set(QUERY_VALUES)
    assert len(sampled(ALL_FIELDS)) >= 10 and len(sampled(QUERY_VALUES)) >= 6
