"""The billing catalogue: products, currencies and addendum statuses.

One table for every door: the addendum list's filters validate against it, the
importer checks imported addendums against it, and the demo landscape draws from it.
"""

from __future__ import annotations

STATUSES = ("upcoming", "active", "paused", "stopped")
CURRENCIES: dict[int, str] = {1: "USD", 2: "EUR"}
CURRENCY_CODES = ("EUR", "USD")
PRODUCTS: dict[int, str] = {
    1: "CDN", 2: "STORAGE", 3: "DDOS", 4: "STREAMING", 5: "CLOUD", 6: "CONNECT",
    7: "WG_PRIVATE_CLOUD", 8: "P2P", 9: "INFRASTRUCTURE_PROTECTION", 10: "DNS",
    11: "OTHER_SERVICES", 12: "PREMIUM_SUPPORT", 13: "CONNECTIVITY", 14: "GHOST",
    15: "MANAGED_SERVICES", 16: "RENT", 17: "SOFTWARE_DEVELOPMENT", 18: "VMWARE", 19: "LAAS",
    20: "AWS_CLOUD", 21: "FAST_EDGE", 22: "TECHNICAL_SUPPORT", 23: "WAAP", 25: "SHIELD_PROXY",
    32: "AI_DEDCOMP",
}  # fmt: skip
PRODUCT_IDS: dict[str, int] = {name: pid for pid, name in PRODUCTS.items()}
