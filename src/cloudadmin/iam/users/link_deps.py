"""What the invitation endpoints take from the application: the set-password tokens'
generator (under the secret key) and the base of the links they mail."""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated

from fastapi import Depends, Request

from cloudadmin.iam.users.set_password_token import SetPasswordTokens
from cloudadmin.web.app_state import app_state


@lru_cache(maxsize=4)
def _tokens(keys: tuple[str, ...]) -> SetPasswordTokens:
    return SetPasswordTokens(*keys)


async def get_set_password_tokens(request: Request) -> SetPasswordTokens:
    """Signs under the current secret key; links signed under a previous one
    (``CLOUDADMIN_SECRET_KEYS_OLD``) still work until they expire."""
    return _tokens(tuple(app_state(request.app).settings.secret_keys()))


async def get_link_base(request: Request) -> str:
    """``public_base_url``, else the address this request was sent to."""
    configured = app_state(request.app).settings.public_base_url
    return (configured or str(request.base_url)).rstrip("/")


async def note_refused_token(request: Request) -> None:
    """A refused set-password token counts as a failed authentication of the client's
    address (auth/throttle.py): guessing is throttled like guessing API keys."""
    await app_state(request.app).throttle.failed(request)


SetPasswordTokensDep = Annotated[SetPasswordTokens, Depends(get_set_password_tokens)]
LinkBase = Annotated[str, Depends(get_link_base)]
