"""All models, imported here so that Base.metadata knows every table."""

from cloudadmin.db.models.accounts import GROUPS, ApiKey, Client, Group, User, user_groups
from cloudadmin.db.models.activity import ActivityLogEntry
from cloudadmin.db.models.billing import Addendum
from cloudadmin.db.models.cloud import (
    AmqpSubscription,
    LifecyclePolicy,
    Listener,
    PriceCatalogue,
    Project,
    Region,
)
from cloudadmin.db.models.events import (
    DeliveryState,
    EventDelivery,
    FailedLoginNotice,
    MailMessage,
    UserActionEvent,
    UserActionResource,
)
from cloudadmin.db.models.idempotency import IdempotencyKey
from cloudadmin.db.models.instance import InstanceMark
from cloudadmin.db.models.portal import (
    PortalFailedSignInNotice,
    PortalPreference,
    PortalSession,
)
from cloudadmin.db.models.reports import MonthlyReport
from cloudadmin.db.models.reselling import Branding, NotificationSetting
from cloudadmin.db.models.sellers import Seller
from cloudadmin.db.models.tasks import Task
from cloudadmin.db.models.two_factor import UserTwoFactor
from cloudadmin.db.models.webhooks import (
    WebhookDelivery,
    WebhookDeliveryState,
    WebhookSubscription,
)

__all__ = [
    "GROUPS",
    "ActivityLogEntry",
    "Addendum",
    "AmqpSubscription",
    "ApiKey",
    "Branding",
    "Client",
    "DeliveryState",
    "EventDelivery",
    "FailedLoginNotice",
    "Group",
    "IdempotencyKey",
    "InstanceMark",
    "LifecyclePolicy",
    "MailMessage",
    "MonthlyReport",
    "Listener",
    "NotificationSetting",
    "PortalFailedSignInNotice",
    "PortalPreference",
    "PortalSession",
    "PriceCatalogue",
    "Project",
    "Region",
    "Seller",
    "Task",
    "User",
    "UserActionEvent",
    "UserActionResource",
    "UserTwoFactor",
    "WebhookDelivery",
    "WebhookDeliveryState",
    "WebhookSubscription",
    "user_groups",
]
