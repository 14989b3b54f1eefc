"""Wire shapes of webhook subscriptions (the provider's CreateUserActionSubscriptionSerializer,
UserActionSubscriptionSerializer and UserActionsSubscriptionCollectionSerializer)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from cloudadmin.kit.body import LenientBody
from cloudadmin.kit.redact import MASK


class WebhookSubscriptionCreate(LenientBody):
    """Body of POST subscribe. Checked by the service (every problem at once)."""

    url: str = Field(
        description="URL to send user action logs for the specified client: http:// or "
        "https://, without user name or password.",
        examples=["https://hooks.shop.example/user-actions"],
    )
    auth_header_name: str = Field(
        description="Authorization header name (an HTTP header name).",
        examples=["Authorization"],
    )
    auth_header_value: str = Field(
        description="Authorization header value, sent with every message; stored "
        "encrypted and never shown again.",
        examples=["Bearer s3cret-token"],
    )


class WebhookSubscription(BaseModel):
    id: int = Field(description="Subscription ID", examples=[17])
    url: str
    auth_header_name: str
    auth_header_value: str = Field(
        description=f"Always the mask `{MASK}`: the value is a secret of the subscriber's.",
        examples=[MASK],
    )


class WebhookSubscriptionList(BaseModel):
    count: int = Field(ge=0)
    results: list[WebhookSubscription]
