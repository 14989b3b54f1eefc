"""Documents used by the importer tests."""

from __future__ import annotations

import copy
from typing import Any

# The example load document of the load format's first description, verbatim.
EXAMPLE: dict[str, Any] = {
    "clients": [
        {"id": 1000, "email": "ops@acme.example", "companyName": "Acme Hosting",
         "client_type": "reseller"},
        {"id": 2001, "email": "owner@shop.example", "companyName": "Shop Ltd",
         "client_type": "common", "resellers": 1000, "status": "active",
         "capabilities": ["CDN", "CLOUD"]},
    ],
    "users": [
        {"id": 1, "email": "root@operator.example", "client": 1000,
         "groups": ["Administrators"], "superuser": True},
        {"id": 10, "email": "admin@acme.example", "client": 1000, "groups": ["Administrators"],
         "user_type": "reseller"},
        {"id": 20, "email": "owner@shop.example", "client": 2001, "groups": ["Administrators"]},
    ],
    "api_keys": [
        {"id": 1, "user": 1, "key": "1_operator-secret"},
        {"id": 2, "user": 10, "key": "2_reseller-secret"},
        {"id": 3, "user": 20, "key": "3_client-secret"},
    ],
    "projects": [{"id": 11, "client": 2001, "name": "default"}],
    "regions": [{"id": 76, "name": "Luxembourg-2"}],
}  # fmt: skip


def example() -> dict[str, Any]:
    return copy.deepcopy(EXAMPLE)


def listener(**fields: Any) -> dict[str, Any]:
    record = {
        "id": "6f1b3c2a-9d4e-4f5a-8b7c-0123456789ab",
        "project_id": 11,
        "region_id": 76,
        "name": "web",
        "load_balancer_id": None,
        "operating_status": "ONLINE",
        "protocol": "HTTP",
        "protocol_port": 80,
        "provisioning_status": "ACTIVE",
    }
    record.update(fields)
    return record


def addendum(ident: int = 1, **fields: Any) -> dict[str, Any]:
    record = {
        "id": ident,
        "client_id": 2001,
        "status": "active",
        "active_range": {"start": "2025-01-01T00:00:00Z", "end": None},
        "created_at": "2024-12-24T10:00:00+02:00",
        "currency": {"id": 2, "char_code": "EUR", "symbol": "€"},
        "plan": {"id": 501, "name": "Cloud"},
        "product": {"id": 5, "name": "Cloud", "internal_name": "CLOUD"},
    }
    record.update(fields)
    return record
