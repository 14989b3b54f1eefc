"""What cloud endpoints take from the application: its secret box, its outbound policy,
and the documented error body of their own responses."""

from __future__ import annotations

from starlette.requests import Request

from cloudadmin.auth.app_state import app_state
from cloudadmin.kit.crypto import SecretBox
from cloudadmin.kit.outbound import Outbound

ERROR_BODY = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def secret_box(request: Request) -> SecretBox:
    return app_state(request.app).secret_box


def outbound(request: Request) -> Outbound:
    return app_state(request.app).outbound
