"""Walking the Admin Portal as its tests need to, so that a section added later is
covered without being named: the application's routes under /portal (their methods and
path parameters, filled with the arranged people's ids), the pages a signed-in user
reaches by following links breadth-first, and the forms of a page (their fields and
what they hold).

Used by the generic tests: test_headers.py, test_generic_rules.py,
test_hostile_forms.py (over HTTP) and test_accessibility.py (in the browser).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser
from types import SimpleNamespace
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx
from fastapi.routing import APIRoute
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import Client, NotificationSetting, Seller, User
from cloudadmin.kit.crypto import hash_password
from tests.factories import make_key, make_seller
from tests.portal.people import PASSWORD, People, arrange_people, sign_in

PREFIX = "/portal"
# Pages the walk does not open: the static files, a download, signing out.
SKIPPED = re.compile(r"^/portal/(static/|sign-out\b)|\.csv$|/export\b|/download\b")
PARAMETER = re.compile(r"\{([^}:]+)(?::[^}]*)?\}")
DEFAULT_LIMIT = 60


@dataclass(frozen=True)
class Route:
    """A route of the portal: its path (with ``{parameters}``), methods and name."""

    path: str
    methods: frozenset[str]
    name: str

    @property
    def parameters(self) -> list[str]:
        return PARAMETER.findall(self.path)

    def __str__(self) -> str:
        return f"{'/'.join(sorted(self.methods))} {self.path} ({self.name})"


def _flattened(routes: Iterable[Any]) -> Iterator[Any]:
    """Routes as FastAPI holds them: an included router (FastAPI 0.16x) is a route of
    its own that holds its router's routes (its prefix is already in their paths)."""
    for route in routes:
        original = getattr(route, "original_router", None)
        if original is not None:
            yield from _flattened(original.routes)
        else:
            yield route


def portal_routes(app: Any) -> list[Route]:
    """Every route of the application under /portal (the static files excepted: a mount)."""
    found = []
    for route in _flattened(app.router.routes):
        if isinstance(route, APIRoute) and route.path.startswith(PREFIX):
            methods = frozenset(route.methods or ()) - {"HEAD", "OPTIONS"}
            found.append(Route(route.path, methods, route.name))
    assert found, "no portal route found: has the way routes are held changed?"
    return found


def portal_router_routes() -> list[Route]:
    """The portal's routes without an application (for a test's parameters)."""
    from cloudadmin.portal.routes import router

    return portal_routes(SimpleNamespace(router=router))


def routes_with(app: Any, method: str) -> list[Route]:
    return [r for r in portal_routes(app) if method in r.methods]


def route_of(routes: Iterable[Route], path: str) -> Route | None:
    """The route that answers ``path`` (without its query), by its pattern."""
    bare = urlsplit(path).path
    for route in routes:
        pattern = PARAMETER.sub(
            "[^/]+", re.escape(route.path).replace("\\{", "{").replace("\\}", "}")
        )
        if re.fullmatch(pattern, bare):
            return route
    return None


def fill(path: str, value: Callable[[str], object]) -> str:
    """The path with each parameter replaced by ``value(name)``."""
    return PARAMETER.sub(lambda m: str(value(m.group(1))), path)


# An id that no row has: a parameter of a kind the people do not have.
NO_SUCH_ID = 2_000_000_000


@dataclass(frozen=True)
class Tenants:
    """tests/portal/people.py's people (their seller with a password: it signs in), and
    rows of other kinds for both resellers: a seller of the other reseller, a
    notification setting and an API token each."""

    people: People
    other_seller_id: int
    # By kind: (the reseller's own row, the other reseller's).
    rows: dict[str, tuple[int, int]] = field(default_factory=dict)

    def id_of(self, name: str, *, other: bool = False) -> int:
        """The arranged id a path parameter names, by its name: a reseller's, a seller's,
        a user's, an account's (a client), a notification setting's, an API token's.
        ``other``: the other reseller's, which the reseller (emails["reseller"]) may not
        see. Parameters of other kinds get an id no row has (no such row is arranged)."""
        people = self.people
        key = name.lower()
        for kind, (own, others) in self.rows.items():
            if kind in key:
                return others if other else own
        if "reseller" in key:
            return people.other_reseller_id if other else people.reseller_id
        if "seller" in key:
            return self.other_seller_id if other else people.seller_id
        if "user" in key:
            return people.user_ids["other_reseller" if other else "reseller"]
        if "account" in key or "client" in key or key == "id":
            return people.other_client_id if other else people.client_id
        return NO_SUCH_ID

    def path(self, route: Route, *, other: bool = False) -> str:
        return fill(route.path, lambda name: self.id_of(name, other=other))


def known_kind(name: str, rows: Iterable[str] = ("setting", "token")) -> bool:
    key = name.lower()
    words = ("seller", "user", "account", "client", *rows)
    return any(word in key for word in words) or key == "id"


async def arrange_tenants(session: AsyncSession) -> Tenants:
    people = await arrange_people(session)
    other = await session.get(Client, people.other_reseller_id)
    assert other is not None
    seller = await make_seller(session, other, activated=True)
    # The first reseller's seller signs in (emails["seller"]), as after its invitation.
    own_seller = await session.get(Seller, people.seller_id)
    assert own_seller is not None
    own_seller.password_hash = hash_password(PASSWORD)
    rows: dict[str, tuple[int, int]] = {}
    settings, tokens = [], []
    for reseller_id, user_kind in (
        (people.reseller_id, "reseller"),
        (people.other_reseller_id, "other_reseller"),
    ):
        setting = NotificationSetting(
            reseller_id=reseller_id, notification_type="failed_login", email="n@example.com"
        )
        session.add(setting)
        await session.flush()
        settings.append(setting.id)
        user = await session.get(User, people.user_ids[user_kind])
        assert user is not None
        tokens.append(int((await make_key(session, user)).split("_")[0]))
    rows["setting"] = (settings[0], settings[1])
    rows["token"] = (tokens[0], tokens[1])
    await session.commit()
    return Tenants(people, seller.id, rows)


# Security headers ---------------------------------------------------------------------

# The only sources a directive may name: the service's own origin, or nothing.
OWN_ORIGIN = {"'self'", "'none'"}
REFERRER_POLICIES = {"no-referrer", "same-origin", "strict-origin"}


def directives(policy: str) -> dict[str, list[str]]:
    parsed = {}
    for part in policy.split(";"):
        words = part.split()
        if words:
            parsed[words[0].lower()] = words[1:]
    return parsed


def header_problems(r: httpx.Response) -> list[str]:
    """What is wrong with an answer's security headers (nothing: an empty list)."""
    problems = []
    policy = r.headers.get("content-security-policy")
    if policy is None:
        return ["no Content-Security-Policy"]
    found = directives(policy)
    if found.get("default-src") != ["'self'"]:
        problems.append(f"default-src is {found.get('default-src')}, not 'self'")
    if found.get("frame-ancestors") != ["'none'"]:
        problems.append(f"frame-ancestors is {found.get('frame-ancestors')}, not 'none'")
    for name, sources in found.items():
        fetching = name.endswith("-src") or name in ("frame-ancestors", "base-uri", "form-action")
        if fetching and not set(sources) <= OWN_ORIGIN:
            problems.append(f"{name} allows {sorted(set(sources) - OWN_ORIGIN)}")
    if r.headers.get("x-content-type-options") != "nosniff":
        problems.append(f"X-Content-Type-Options: {r.headers.get('x-content-type-options')}")
    if r.headers.get("referrer-policy") not in REFERRER_POLICIES:
        problems.append(f"Referrer-Policy: {r.headers.get('referrer-policy')}")
    return problems


# Pages and links ---------------------------------------------------------------------


def followable(href: str, current: str) -> str | None:
    """The path and query a link of page ``current`` leads to, when the walk should open
    it: the portal's own, not a download or signing out; None otherwise."""
    if not href or href.startswith(("#", "mailto:", "tel:", "javascript:")):
        return None
    target = urlsplit(urljoin(current, href))
    here = urlsplit(current)
    if target.scheme not in ("", here.scheme) or target.netloc not in ("", here.netloc):
        return None
    if not target.path.startswith(f"{PREFIX}/") or SKIPPED.search(target.path):
        return None
    return target.path + (f"?{target.query}" if target.query else "")


@dataclass
class Form:
    """A form of a page: where it goes, how, and its fields with what they hold (a
    select: its options, the selected one first; a checkbox: its value)."""

    action: str
    method: str
    fields: dict[str, list[str]] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)

    def values(self) -> dict[str, str]:
        """What the form sends as it is shown (the first value of each field)."""
        return {name: values[0] if values else "" for name, values in self.fields.items()}


@dataclass
class Parsed:
    links: list[str] = field(default_factory=list)
    forms: list[Form] = field(default_factory=list)
    # Attributes and elements the Content-Security-Policy forbids: (what, where).
    inline: list[str] = field(default_factory=list)


class _PageParser(HTMLParser):
    def __init__(self, url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.url = url
        self.parsed = Parsed()
        self._form: Form | None = None
        self._select: str | None = None
        self._options: list[tuple[str, bool]] = []
        self._option_text: list[str] | None = None
        self._textarea: str | None = None
        self._script_has_src = True

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        for name, value in a.items():
            if name.startswith("on"):
                self.parsed.inline.append(f"<{tag} {name}=...>")
            if name == "style":
                self.parsed.inline.append(f"<{tag} style=...>")
            if name in ("href", "src", "action", "formaction") and value.strip().lower().startswith(
                "javascript:"
            ):
                self.parsed.inline.append(f"<{tag} {name}=javascript:...>")
        if tag == "style":
            self.parsed.inline.append("<style> element")
        if tag == "script":
            self._script_has_src = bool(a.get("src"))
            if not self._script_has_src:
                self.parsed.inline.append("<script> without src")
        if tag == "a" and "href" in a:
            self.parsed.links.append(a["href"])
        elif tag == "form":
            self._form = Form(
                action=urljoin(self.url, a.get("action") or self.url),
                method=(a.get("method") or "get").lower(),
            )
            self.parsed.forms.append(self._form)
        elif self._form is not None and "name" in a:
            name = a["name"]
            if tag == "input":
                kind = (a.get("type") or "text").lower()
                if kind in ("submit", "button", "image", "reset", "file"):
                    return
                self._form.kinds[name] = kind
                values = self._form.fields.setdefault(name, [])
                if kind in ("checkbox", "radio"):
                    # Checked first: what the form sends as it is.
                    value = a.get("value", "on")
                    values.insert(0, value) if "checked" in a else values.append(value)
                else:
                    values.append(a.get("value", ""))
            elif tag == "select":
                self._select = name
                self._options = []
                self._form.kinds[name] = "select"
            elif tag == "textarea":
                self._textarea = name
                self._form.kinds[name] = "textarea"
                self._form.fields.setdefault(name, []).append("")
        if tag == "option" and self._select is not None:
            self._options.append((a.get("value", "\0text"), "selected" in a))
            self._option_text = [] if "value" not in a else None

    def handle_data(self, data: str) -> None:
        if self._option_text is not None:
            self._option_text.append(data)
        if self._textarea is not None and self._form is not None:
            self._form.fields[self._textarea][-1] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "option" and self._option_text is not None and self._options:
            value, chosen = self._options[-1]
            self._options[-1] = ("".join(self._option_text).strip(), chosen)
            self._option_text = None
        elif tag == "select" and self._select is not None and self._form is not None:
            chosen = [v for v, selected in self._options if selected]
            rest = [v for v, selected in self._options if not selected]
            self._form.fields[self._select] = chosen + rest
            self._select = None
        elif tag == "textarea":
            self._textarea = None
        elif tag == "form":
            self._form = None


def parse(html: str, url: str) -> Parsed:
    """The links, forms and inline script or style of a page at ``url``."""
    parser = _PageParser(url)
    parser.feed(html)
    parser.close()
    return parser.parsed


class _MarkupParser(HTMLParser):
    """What docs/portal.md, "Accessibility", asks of every page's markup, as read
    without a browser: one <h1>, a scope on every <th>, a label for every input, text
    for every button."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.h1 = 0
        self.problems: list[str] = []
        self.label_for: set[str] = set()
        self.inputs: list[tuple[str, bool]] = []  # (what, labelled without a <label for>)
        self._label_depth = 0
        self._button: list[str] | None = None
        self._button_named = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        named = bool(a.get("aria-label") or a.get("aria-labelledby") or a.get("title"))
        if tag == "h1":
            self.h1 += 1
        elif tag == "th" and a.get("scope") not in ("col", "row", "colgroup", "rowgroup"):
            self.problems.append(f"<th> without scope: {a}")
        elif tag == "label":
            self._label_depth += 1
            if a.get("for"):
                self.label_for.add(a["for"])
        elif tag in ("input", "select", "textarea"):
            kind = a.get("type", "text").lower() if tag == "input" else tag
            if kind not in ("hidden", "submit", "button", "reset", "image"):
                what = f"<{tag} name={a.get('name')!r} id={a.get('id')!r}>"
                self.inputs.append((f"{what}#{a.get('id', '')}", named or self._label_depth > 0))
            elif kind in ("submit", "button", "reset") and not (a.get("value") or named):
                self.problems.append(f"<input type={kind}> without text")
        elif tag == "button":
            self._button = []
            self._button_named = named

    def handle_data(self, data: str) -> None:
        if self._button is not None:
            self._button.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "label":
            self._label_depth = max(0, self._label_depth - 1)
        elif tag == "button" and self._button is not None:
            if not "".join(self._button).strip() and not self._button_named:
                self.problems.append("<button> without text")
            self._button = None


def markup_problems(html: str) -> list[str]:
    """What a page's markup lacks (nothing: an empty list)."""
    parser = _MarkupParser()
    parser.feed(html)
    parser.close()
    problems = list(parser.problems)
    if parser.h1 != 1:
        problems.append(f"{parser.h1} <h1> elements, not one")
    for what, labelled in parser.inputs:
        element, _, element_id = what.rpartition("#")
        if not labelled and element_id not in parser.label_for:
            problems.append(f"{element} without a label")
    return problems


def path_of(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


# Walking over HTTP ----------------------------------------------------------------------


def new_client(app: Any, address: str = "203.0.113.7") -> httpx.AsyncClient:
    """A client of its own (its own cookies), as the ``client`` fixture makes; from
    another ``address``, it has a failed-sign-in throttle of its own."""
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://testserver")


@asynccontextmanager
async def signed_in(app: Any, email: str) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    """A client of its own signed in as ``email``, and its session's CSRF token."""
    async with new_client(app) as client:
        yield client, await sign_in(client, email)


@dataclass
class Visit:
    """A page the walk opened: where, the answer, and what it holds."""

    path: str
    response: httpx.Response
    parsed: Parsed


def is_page(response: httpx.Response) -> bool:
    return response.headers.get("content-type", "").startswith(
        "text/html"
    ) and "attachment" not in response.headers.get("content-disposition", "")


async def walk(
    client: httpx.AsyncClient,
    starts: Iterable[str] = (f"{PREFIX}/",),
    *,
    limit: int = DEFAULT_LIMIT,
) -> list[Visit]:
    """The pages a signed-in client reaches from ``starts`` by following links and
    redirects, breadth-first, at most ``limit`` of them (each path once; a download, an
    answer that is not HTML and signing out are not followed)."""
    queue = deque(starts)
    seen = set(queue)
    visits = []
    while queue and len(visits) < limit:
        path = queue.popleft()
        response = await client.get(path)
        base = str(response.url)
        targets: list[str] = []
        if response.is_redirect:
            targets.append(response.headers["location"])
            parsed = Parsed()
        elif is_page(response):
            parsed = parse(response.text, base)
            targets += parsed.links
        else:
            continue
        visits.append(Visit(path, response, parsed))
        for href in targets:
            target = followable(href, base)
            if target is not None and target not in seen:
                seen.add(target)
                queue.append(target)
    return visits
