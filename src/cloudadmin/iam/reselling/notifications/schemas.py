"""Wire shapes of reseller notification settings (operations 9-11)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, EmailStr, Field

from cloudadmin.kit.body import LenientBody
from cloudadmin.kit.omit import Omittable, PartialUpdate, omitted

NotificationType = Literal["deletion_request", "failed_login"]
NotificationEmail = Annotated[EmailStr, Field(max_length=254)]


class NotificationSettingCreate(LenientBody):
    notification_type: NotificationType
    email: NotificationEmail
    enabled: bool = True


class NotificationSettingPatch(PartialUpdate):
    """Partial: absent fields are left untouched; none of them takes null."""

    notification_type: Omittable[NotificationType] = None
    email: Omittable[NotificationEmail] = None
    enabled: Omittable[bool] = None


class NotificationSetting(BaseModel):
    id: int
    reseller: int
    notification_type: NotificationType
    email: str
    enabled: bool


class NotificationSettingPage(BaseModel):
    count: int
    next: str | None = omitted("The next page (absolute URI); absent on the last page.")
    previous: str | None = omitted("The previous page (absolute URI); absent on the first page.")
    results: list[NotificationSetting]
