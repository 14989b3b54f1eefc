"""A small, realistic landscape for `cloudadmin serve --demo` and for trying the API.

The document is built in code (not kept as JSON) so its API keys can be fresh
on every call while every id stays fixed; everything else follows from the seed.
Ids of different kinds are far apart so a wrong id in a request stands out.

The AMQP subscription and the reseller's mail server point only at what the caller
found listening on this machine (demo/local_services.py), never at names that do not
resolve: a destination that can never be reached fills the log with failures forever.
"""

from __future__ import annotations

import random
import secrets
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from cloudadmin.billing.catalogue import PRODUCTS

OPERATOR_HOME = 900
RESELLER = 1000
CLIENTS = (2001, 2002)
PROJECTS = {2001: 11, 2002: 12}
REGION = 76
ADDENDUMS = 300
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
# The Admin Portal's sign-in (docs/portal.md, "Trying it"): every user of the demo, and
# the seller who has set a password, sign in with this password. One address per kind
# of person is printed by serve --demo; a client's user is shown the page that says
# the Admin Portal is not for client accounts.
PASSWORD = "demo-password"
PORTAL_PEOPLE = {
    "operator": "root@operator.example",
    "reseller": "admin@acme.example",
    "seller": "jane.seller@acme.example",
    "client user": "owner@shop.example",
}
# The seller who signs in (Jane: activated; Sam has not set a password yet).
SELLER_WITH_PASSWORD = 501
# Exists on every RabbitMQ: bind a queue to it with routing key "cloudadmin" to watch.
DEMO_EXCHANGE = "amq.topic"
DEMO_ROUTING_KEY = "cloudadmin"


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _key(key_id: int) -> str:
    return f"{key_id}_{secrets.token_urlsafe(32)}"


def build_demo(
    seed: int = 7, *, amqp_url: str | None = None, smtp: tuple[str, int] | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """The document and, per kind of caller, the API key token to send.

    ``amqp_url``: the broker of client 2001's subscription (none without it); ``smtp``:
    host and port of the reseller's mail server (plain SMTP, no login; none without it).
    """
    rng = random.Random(seed)
    keys = {
        "operator": _key(1),
        "reseller": _key(2),
        "client_admin": _key(3),
        "client_member": _key(4),
        "engineer": _key(5),
        "other_client_admin": _key(6),
    }
    document: dict[str, Any] = {
        "clients": _clients(),
        "users": _users(),
        "api_keys": [
            {"id": 1, "user": 1, "key": keys["operator"], "name": "demo operator"},
            {"id": 2, "user": 10, "key": keys["reseller"], "name": "demo reseller"},
            {"id": 3, "user": 20, "key": keys["client_admin"], "name": "demo client admin"},
            {"id": 4, "user": 21, "key": keys["client_member"], "name": "demo client member"},
            {"id": 5, "user": 22, "key": keys["engineer"], "name": "demo engineer"},
            {"id": 6, "user": 30, "key": keys["other_client_admin"], "name": "demo admin 2"},
        ],
        "sellers": [
            {"id": 501, "email": "jane.seller@acme.example", "full_name": "Jane Seller",
             "reseller": RESELLER, "phone": "+352 20 30 40", "activated": True,
             "date_joined": "2024-02-01T09:00:00Z"},
            {"id": 502, "email": "sam.sales@acme.example", "full_name": "Sam Sales",
             "reseller": RESELLER, "date_joined": "2024-03-15T14:30:00Z"},
        ],
        "branding": [_branding(smtp)],
        "notification_settings": [
            {"id": 301, "reseller": RESELLER, "notification_type": "deletion_request",
             "email": "privacy@acme.example"},
            {"id": 302, "reseller": RESELLER, "notification_type": "failed_login",
             "email": "security@acme.example", "enabled": False},
        ],
        "projects": [
            {"id": PROJECTS[2001], "client": 2001, "name": "default"},
            {"id": PROJECTS[2002], "client": 2002, "name": "production"},
        ],
        "regions": [{"id": REGION, "name": "Luxembourg-2"}],
        "listeners": _listeners(rng),
        "lifecycle_policies": _policies(),
        "prices": [_prices()],
        "amqp_subscriptions": [
            {"id": 401, "client": 2001, "connection_string": amqp_url,
             "exchange": DEMO_EXCHANGE, "routing_key": DEMO_ROUTING_KEY,
             "receive_child_client_events": False},
        ] if amqp_url else [],
        "addendums": _addendums(rng),
    }  # fmt: skip
    return document, keys


def _clients() -> list[dict[str, Any]]:
    # Per-service statuses take the API's values (new, trial, ..., docs/import.md).
    active = {"status": "active", "enabled": True}
    trial = {"status": "trial", "enabled": True}
    return [
        {"id": OPERATOR_HOME, "email": "ops@operator.example", "companyName": "Operator",
         "client_type": "reseller", "created_at": "2023-01-01T00:00:00Z"},
        {"id": RESELLER, "email": "ops@acme.example", "companyName": "Acme Hosting",
         "client_type": "reseller", "entryBaseDomain": "panel.acme.example",
         "capabilities": ["CDN", "CLOUD", "DNS"], "country_code": "LU",
         "created_at": "2023-06-01T08:00:00Z"},
        {"id": 2001, "email": "owner@shop.example", "companyName": "Shop Ltd",
         "name": "Olivia Owner", "client_type": "common", "resellers": RESELLER,
         "seller": 501, "status": "active",
         "capabilities": ["CDN", "CLOUD"],
         "serviceStatuses": {"CDN": active, "CLOUD": active},
         "paidFeatures": {"CDN": [{"feature_id": 7, "name": "Image optimization",
                                   "service": "CDN"}]},
         "country_code": "DE", "signup_process": "sign_up_full", "phone": "+49 30 1234567",
         "website": "https://shop.example", "created_at": "2024-04-02T10:00:00Z"},
        {"id": 2002, "email": "it@bakery.example", "companyName": "Bakery GmbH",
         "name": "Ben Baker", "client_type": "common", "resellers": RESELLER,
         "seller": 502, "status": "trial",
         "capabilities": ["CLOUD"], "serviceStatuses": {"CLOUD": trial}, "is_test": True,
         "country_code": "AT", "created_at": "2024-09-20T12:00:00Z"},
    ]  # fmt: skip


def _users() -> list[dict[str, Any]]:
    def user(uid: int, email: str, client: int, groups: list[str], **extra: Any) -> dict[str, Any]:
        return {"id": uid, "email": email, "client": client, "groups": groups,
                "password": PASSWORD, **extra}  # fmt: skip

    return [
        user(1, "root@operator.example", OPERATOR_HOME, ["Administrators"], superuser=True,
             name="Platform Operator"),
        user(10, "admin@acme.example", RESELLER, ["Administrators"], user_type="reseller",
             name="Rita Reseller"),
        user(20, "owner@shop.example", 2001, ["Administrators"], name="Olivia Owner"),
        user(21, "clerk@shop.example", 2001, ["Users"], name="Carl Clerk", lang="de"),
        user(22, "devops@shop.example", 2001, ["Engineers", "Users"], name="Erin Engineer"),
        user(23, "cdn@shop.example", 2001, ["Purge and Prefetch only (API)"], name="Cache Bot",
             auth_types=["password"]),
        user(30, "it@bakery.example", 2002, ["Administrators"], name="Ben Baker"),
        user(31, "oven@bakery.example", 2002, ["Engineers"], name="Otto Oven", lang="en"),
    ]  # fmt: skip


def _branding(smtp: tuple[str, int] | None) -> dict[str, Any]:
    mail_server = {"tls": False, "host": smtp[0], "port": str(smtp[1])} if smtp else None
    return {
        "reseller": RESELLER,
        "domain": "acme.example",
        "publicSettings": {
            "showApiDoc": True, "showStatusPage": "https://status.acme.example",
            "showKnowledgeBase": True, "showTickets": False, "brandName": "Acme Cloud",
            "websiteLink": "https://acme.example", "supportEmail": "support@acme.example",
            "supportPhone": "+352 20 30 40 50", "agreementLink": "https://acme.example/terms",
            "entryBaseDomain": "panel.acme.example", "fromEmail": "noreply@acme.example",
            "colors": {"header": "#1d3557", "primary": "#e63946", "headerText": "#f1faee"},
        },
        "privateSettings": {"mailServer": mail_server},
    }  # fmt: skip


def _listeners(rng: random.Random) -> list[dict[str, Any]]:
    def uid() -> str:
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))

    specs = [
        (PROJECTS[2001], "web-https", "TERMINATED_HTTPS", 443, "ONLINE", "ACTIVE", False),
        (PROJECTS[2001], "web-http", "HTTP", 80, "ONLINE", "ACTIVE", False),
        (PROJECTS[2001], "metrics", "PROMETHEUS", 9100, "OFFLINE", "PENDING_UPDATE", True),
        (PROJECTS[2002], "orders-tcp", "TCP", 5432, "DEGRADED", "ACTIVE", False),
    ]
    listeners = []
    for project, name, protocol, port, operating, provisioning, locked in specs:
        http = protocol in ("HTTP", "TERMINATED_HTTPS")
        listeners.append({
            "id": uid(), "project_id": project, "region_id": REGION, "name": name,
            "protocol": protocol, "protocol_port": port, "operating_status": operating,
            "provisioning_status": provisioning, "load_balancer_id": uid(),
            "connection_limit": 100_000 if http else -1,
            "allowed_cidrs": ["0.0.0.0/0"] if http else ["10.0.0.0/8", "192.168.0.0/16"],
            "insert_headers": {"X-Forwarded-For": "true"} if http else {},
            "creator_task_id": uid(),
            # A task holding the lock: renaming this listener must be refused.
            "task_id": uid() if locked else None,
            "secret_id": uid() if protocol == "TERMINATED_HTTPS" else None,
            "pool_count": 1,
            "timeout_client_data": 50_000 if http else None,
            "stats": {"active_connections": rng.randint(0, 500),
                      "bytes_in": rng.randint(10**6, 10**9), "bytes_out": rng.randint(10**6, 10**9),
                      "request_errors": rng.randint(0, 50),
                      "total_connections": rng.randint(10**3, 10**6)},
            "user_list": [{"username": "metrics", "encrypted_password": "$6$demo$hash"}]
            if protocol == "PROMETHEUS" else [],
        })  # fmt: skip
    return listeners


def _policies() -> list[dict[str, Any]]:
    retention = {"days": 7, "hours": 0, "minutes": 0, "weeks": 0}
    return [
        {"id": 601, "project_id": PROJECTS[2001], "region_id": REGION, "name": "nightly",
         "status": "active", "user_id": 22, "action": "volume_snapshot",
         "schedules": [{"id": "a1f3c1de-0000-4000-8000-000000000601", "type": "cron",
                        "minute": "0", "hour": "2", "day": "*", "month": "*", "week": "*",
                        "day_of_week": "*", "timezone": "Europe/Luxembourg",
                        "max_quantity": 7, "retention_time": retention, "owner": "lifecycle_policy",
                        "owner_id": 601, "user_id": 22,
                        "resource_name_template": "nightly-{volume_id}-{time}"}],
         "volumes": [{"volume_id": "5e0c9d1a-7c55-4a0e-9f42-000000000001", "volume_name": "db"},
                     {"volume_id": "5e0c9d1a-7c55-4a0e-9f42-000000000002", "volume_name": "web"}]},
        {"id": 602, "project_id": PROJECTS[2002], "region_id": REGION, "name": "every-6h",
         "status": "paused", "user_id": 30, "action": "volume_snapshot",
         "schedules": [{"id": "a1f3c1de-0000-4000-8000-000000000602", "type": "interval",
                        "weeks": 0, "days": 0, "hours": 6, "minutes": 0, "max_quantity": 4,
                        "owner": "lifecycle_policy", "owner_id": 602, "user_id": 30,
                        "resource_name_template": "interval-{volume_id}-{time}"}],
         "volumes": [{"volume_id": "5e0c9d1a-7c55-4a0e-9f42-000000000003",
                      "volume_name": "orders"}]},
    ]  # fmt: skip


def _prices() -> dict[str, Any]:
    return {
        "region_id": REGION, "currency_code": "EUR",
        "flavors": {"g1-standard-2-4": "0.0361", "g1-standard-4-8": "0.0722",
                    "g1-cpu-8-16": "0.1530"},
        "volume_types": {"standard": "0.0000611", "ssd_hiiops": "0.0001389"},
        "public_ipv4_per_hour": "0.0041", "tax_percent": "17", "discount_percent": "5",
    }  # fmt: skip


PRODUCT_NAMES = {
    1: "CDN", 2: "Object Storage", 3: "DDoS Protection", 5: "Cloud", 10: "Managed DNS",
    21: "FastEdge", 23: "WAAP",
}  # fmt: skip
PLANS = {
    1: [(101, "CDN Start"), (102, "CDN Pro")],
    2: [(201, "Storage Basic")],
    3: [(301, "DDoS Protection")],
    5: [(501, "Cloud Pay-as-you-go"), (502, "Cloud Commit 12m")],
    10: [(1001, "DNS Free"), (1002, "DNS Premium")],
    21: [(2101, "FastEdge Beta")],
    23: [(2301, "WAAP Standard")],
}
CURRENCY = {1: ("USD", "$"), 2: ("EUR", "€")}


def _addendums(rng: random.Random) -> list[dict[str, Any]]:
    rows = []
    for n in range(ADDENDUMS):
        client = rng.choice(CLIENTS)
        product = rng.choice(list(PLANS))
        plan_id, plan_name = rng.choice(PLANS[product])
        created = EPOCH + timedelta(days=rng.randint(0, 700), minutes=rng.randint(0, 1439))
        start = created + timedelta(days=rng.randint(0, 30))
        status = rng.choices(["active", "upcoming", "paused", "stopped"], [55, 15, 10, 20])[0]
        end: datetime | None = None
        if status == "stopped":
            end = start + timedelta(days=rng.randint(30, 365))
        elif status != "upcoming" and rng.random() < 0.3:
            end = start + timedelta(days=rng.randint(365, 730))
        currency = 2 if rng.random() < 0.7 else 1
        rows.append({
            "id": 100_001 + n, "client_id": client, "status": status,
            "active_range": {"start": _iso(start), "end": _iso(end) if end else None},
            "created_at": _iso(created),
            "currency": {"id": currency, "char_code": CURRENCY[currency][0],
                         "symbol": CURRENCY[currency][1]},
            "plan": {"id": plan_id, "name": plan_name},
            "product": {"id": product, "name": PRODUCT_NAMES[product],
                        "internal_name": PRODUCTS[product]},
            "payer_id": client if rng.random() < 0.9 else RESELLER,
            "provider_id": 1, "reseller_id": RESELLER,
        })  # fmt: skip
    return rows
