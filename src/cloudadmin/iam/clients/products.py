"""Products (services) of an account: availability, per-service statuses, account status."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The order of the `capabilities` enum in the API.
ACCOUNT_PRODUCTS: tuple[str, ...] = ("CDN", "STORAGE", "STREAMING", "DNS", "DDOS", "CLOUD")
# serviceStatuses keys, in the order the spec lists them.
SERVICE_KEYS: tuple[str, ...] = ("CDN", "CLOUD", "DDOS", "DNS", "STORAGE", "STREAMING")
NOT_STARTED = "new"


def effective_availability(
    personal: Mapping[str, bool] | None, reseller_default: Mapping[str, bool] | None
) -> dict[str, bool]:
    """Availability per product: the account's own choice, else its reseller's default,
    else available."""
    personal = personal or {}
    reseller_default = reseller_default or {}
    out: dict[str, bool] = {}
    for product in ACCOUNT_PRODUCTS:
        if product in personal:
            out[product] = bool(personal[product])
        elif product in reseller_default:
            out[product] = bool(reseller_default[product])
        else:
            out[product] = True
    return out


def capabilities(available: Mapping[str, bool]) -> list[str]:
    return [p for p in ACCOUNT_PRODUCTS if available.get(p)]


def initial_service_statuses(available: Mapping[str, bool]) -> dict[str, dict[str, Any]]:
    """A new account: every product not started yet; `enabled` (shown in the control
    panel) follows availability."""
    return {p: {"status": NOT_STARTED, "enabled": bool(available.get(p))} for p in SERVICE_KEYS}


def complete_service_statuses(
    stored: Mapping[str, Any] | None, capabilities_: list[str] | None
) -> dict[str, dict[str, Any]]:
    """All six services, filling gaps in stored (e.g. imported) data: a missing service is
    not started and enabled when it is among the account's capabilities."""
    stored = stored or {}
    caps = set(capabilities_ or [])
    out: dict[str, dict[str, Any]] = {}
    for key in SERVICE_KEYS:
        value = stored.get(key)
        if isinstance(value, Mapping):
            status = value.get("status")
            enabled = value.get("enabled")
            out[key] = {
                "status": status if isinstance(status, str) else NOT_STARTED,
                "enabled": bool(enabled) if enabled is not None else key in caps,
            }
        else:
            out[key] = {"status": NOT_STARTED, "enabled": key in caps}
    return out


def derive_account_status(service_statuses: Mapping[str, Any]) -> str:
    """The account status follows its services, as in the real system:
    preparation (nothing started) -> trial -> active; trialend when trials ended
    without any service active; paused when every started service is paused."""
    found = {v.get("status") for v in service_statuses.values() if isinstance(v, Mapping)}
    if "active" in found:
        return "active"
    if found & {"trial", "activating"}:
        return "trial"
    if "trialend" in found:
        return "trialend"
    if "paused" in found:
        return "paused"
    return "preparation"
