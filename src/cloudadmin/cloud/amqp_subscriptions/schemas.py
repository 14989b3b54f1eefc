"""Wire shapes of AMQP subscriptions to user action events."""

from __future__ import annotations

from pydantic import BaseModel, Field

from cloudadmin.kit.body import LenientBody
from cloudadmin.kit.omit import PartialUpdate

_CONNECTION_DESCRIPTION = (
    "amqp[s]://<username>:<password>@<host>:<port>/<virtual_host>; user, password and "
    "virtual host may be percent-encoded (the default virtual host '/' is %2F)."
)
_CONNECTION_EXAMPLES = ["amqps://events:s3cret@broker.example:5671/%2F"]


class AmqpSubscriptionCreate(LenientBody):
    """Body of POST subscribe_amqp."""

    connection_string: str = Field(
        description=_CONNECTION_DESCRIPTION, examples=_CONNECTION_EXAMPLES
    )
    exchange: str | None = Field(default=None, max_length=255, description="Exchange name.")
    receive_child_client_events: bool = Field(
        default=False,
        description="Also receive the user actions of the clients whose reseller is this account.",
    )
    routing_key: str | None = Field(default=None, max_length=255)


class AmqpSubscriptionUpdate(PartialUpdate):
    """Body of PATCH: every field optional; only the fields sent change."""

    connection_string: str | None = Field(
        default=None,
        description=f"{_CONNECTION_DESCRIPTION} A password that is the mask `***` "
        "(as GET answers) keeps the stored password.",
        examples=_CONNECTION_EXAMPLES,
    )
    exchange: str | None = Field(default=None, max_length=255, description="Null clears it.")
    receive_child_client_events: bool | None = None
    routing_key: str | None = Field(default=None, max_length=255, description="Null clears it.")


class AmqpSubscription(BaseModel):
    connection_string: str = Field(
        description="The connection string with its password masked: "
        "amqp://user:***@host:5672/vhost."
    )
    exchange: str | None
    id: int
    receive_child_client_events: bool
    routing_key: str | None


class AmqpSubscriptionList(BaseModel):
    count: int = Field(ge=0)
    results: list[AmqpSubscription]
