"""The portal's main navigation: the sections each kind of user finds (docs/portal.md,
"Sections"; who may do what: docs/access.md, "The Admin Portal")."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from markupsafe import Markup

from cloudadmin.iam.sign_in.credentials import PortalKind, PortalUser
from cloudadmin.portal.pages import fragment


@dataclass(frozen=True, slots=True)
class Section:
    title: str
    path: str
    kinds: frozenset[PortalKind]


_ADMINS = frozenset({PortalKind.operator, PortalKind.reseller})
_EVERYONE = frozenset({PortalKind.operator, PortalKind.reseller, PortalKind.seller})

SECTIONS = (
    Section("Home", "/portal/", _EVERYONE),
    Section("Accounts", "/portal/accounts", _EVERYONE),
    Section("Users", "/portal/users", _ADMINS),
    Section("Activity logs", "/portal/activity", _ADMINS),
    Section("Vendor settings", "/portal/vendor", frozenset({PortalKind.reseller})),
    Section("Billing", "/portal/billing", _ADMINS),
    Section("Events", "/portal/events", _ADMINS),
    Section("Profile", "/portal/profile", _EVERYONE),
)


def sections_of(kind: PortalKind) -> list[Section]:
    return [section for section in SECTIONS if kind in section.kinds]


def current_section(path: str) -> str | None:
    """The section a path belongs to (the longest matching prefix, Home only itself)."""
    best = None
    for section in SECTIONS:
        if section.path == "/portal/":
            if path == "/portal/":
                return section.path
            continue
        if (path == section.path or path.startswith(section.path + "/")) and (
            best is None or len(section.path) > len(best)
        ):
            best = section.path
    return best


def render(user: PortalUser, csrf_token: str, path: str) -> Markup:
    return _rendered(user.email, user.kind, csrf_token, current_section(path))


# Every page renders the navigation, and one person's is the same on every page of a
# section: kept rendered for the sessions in use (bounded; a process's own memo).
@lru_cache(maxsize=1024)
def _rendered(email: str, kind: PortalKind, csrf_token: str, current: str | None) -> Markup:
    return fragment(
        "navigation.html",
        csrf_token=csrf_token,
        email=email,
        kind=kind.value,
        sections=sections_of(kind) if kind is not PortalKind.client else [],
        current=current,
    )
