"""Wire shapes of reseller notification settings (operations 9-11)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, EmailStr, Field

from cloudadmin.kit.body import LenientBody
from cloudadmin.kit.omit import Omittable, PartialUpdate
from cloudadmin.kit.page_model import LinkedPage

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


class NotificationSettingPage(LinkedPage):
    results: list[NotificationSetting]
