"""A load document (docs/import.md) with N addendums over a realistic landscape.

10,000 accounts by default: 20 resellers, the rest common clients (9 in 10 under a
reseller), a skewed number of addendums per client, products, plans and statuses
spread as a billing system has them, creation instants growing with the id over six
years. Also an operator, a reseller user and a client user with API keys
(``1_bench-operator``, ``2_bench-reseller``, ``3_bench-client``).

    .venv/bin/python bench/gen_addendums.py 1000000 > /tmp/addendums.json
    .venv/bin/python bench/gen_addendums.py 1000 --accounts 200 --seed 7 -o small.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import IO, Any

PRODUCTS = {
    1: ("CDN", "CDN", 30), 5: ("CLOUD", "Cloud", 25), 2: ("STORAGE", "Object Storage", 12),
    10: ("DNS", "Managed DNS", 8), 4: ("STREAMING", "Streaming", 6), 3: ("DDOS", "Web Security", 5),
    9: ("INFRASTRUCTURE_PROTECTION", "DDoS Protection", 4), 23: ("WAAP", "WAAP", 3),
    21: ("FAST_EDGE", "FastEdge", 2), 12: ("PREMIUM_SUPPORT", "Premium Support", 2),
    32: ("AI_DEDCOMP", "AI Managed Dedicated Compute", 1), 16: ("RENT", "Rent", 1),
    25: ("SHIELD_PROXY", "Edge Proxy", 1),
}  # fmt: skip
PLAN_WORDS = ["Start", "Basic", "Pro", "Business", "Enterprise", "Premium", "Über", "Größe"]
STATUSES = [("active", 55), ("stopped", 25), ("paused", 10), ("upcoming", 10)]
COMPANY_WORDS = [
    "Acme",
    "Nordic",
    "Müller",
    "Żółw",
    "Café",
    "Straße",
    "Blue",
    "Data",
    "Σigma",
    "Hosting",
    "Media",
    "Games",
    "Labs",
    "Systems",
    "Cloud",
    "Shop",
]
EPOCH = datetime(2019, 1, 1, tzinfo=UTC)
SPAN = timedelta(days=6 * 365)
RESELLERS = 20
OPERATOR_HOME = 1


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def landscape(accounts: int, rng: random.Random) -> dict[str, Any]:
    resellers = list(range(2, 2 + RESELLERS))
    clients: list[dict[str, Any]] = [
        {
            "id": OPERATOR_HOME,
            "email": "ops@operator.example",
            "companyName": "Operator",
            "client_type": "reseller",
        },
    ]
    for rid in resellers:
        clients.append(
            {
                "id": rid,
                "email": f"r{rid}@reseller.example",
                "companyName": f"Reseller {rid} Hosting",
                "client_type": "reseller",
            }
        )
    for cid in range(2 + RESELLERS, accounts + 1):
        name = " ".join(rng.sample(COMPANY_WORDS, 2)) + f" {cid}"
        record: dict[str, Any] = {
            "id": cid,
            "email": f"c{cid}@client.example",
            "companyName": name,
            "client_type": "common",
        }
        if rng.random() < 0.9:
            record["resellers"] = resellers[min(int(rng.expovariate(0.25)), RESELLERS - 1)]
        clients.append(record)
    common = clients[-1]["id"]
    return {
        "clients": clients,
        "users": [
            {
                "id": 1,
                "email": "root@operator.example",
                "client": OPERATOR_HOME,
                "groups": ["Administrators"],
                "superuser": True,
            },
            {
                "id": 2,
                "email": "admin@reseller.example",
                "client": resellers[0],
                "groups": ["Administrators"],
                "user_type": "reseller",
            },
            {
                "id": 3,
                "email": "owner@client.example",
                "client": common,
                "groups": ["Administrators"],
            },
        ],
        "api_keys": [
            {"id": 1, "user": 1, "key": "1_bench-operator"},
            {"id": 2, "user": 2, "key": "2_bench-reseller"},
            {"id": 3, "user": 3, "key": "3_bench-client"},
        ],
    }


def addendums(n: int, doc: dict[str, Any], rng: random.Random) -> Iterator[dict[str, Any]]:
    commons = [c for c in doc["clients"] if c["client_type"] == "common"]
    # Skewed: a few clients hold many addendums (Pareto weights).
    weights = [rng.paretovariate(1.2) for _ in commons]
    owners = rng.choices(commons, weights=weights, k=n)
    product_ids = list(PRODUCTS)
    product_weights = [PRODUCTS[p][2] for p in product_ids]
    products = rng.choices(product_ids, weights=product_weights, k=n)
    statuses = rng.choices([s for s, _ in STATUSES], weights=[w for _, w in STATUSES], k=n)
    step = SPAN / max(n, 1)
    for i in range(n):
        owner, pid, status = owners[i], products[i], statuses[i]
        internal, pname, _ = PRODUCTS[pid]
        created = EPOCH + step * i + timedelta(seconds=rng.randrange(3600))
        start = created + timedelta(days=rng.choice([0, 0, 1, 7, 30]))
        end = None
        if status == "stopped":
            end = start + timedelta(days=rng.randrange(1, 720))
        elif status == "upcoming":
            start = created + timedelta(days=rng.randrange(1, 90))
        elif rng.random() < 0.2:
            end = start + timedelta(days=rng.randrange(30, 1500))
        plan = rng.randrange(4)
        payer = owner["id"] if rng.random() < 0.9 else rng.choice(commons)["id"]
        yield {
            "id": i + 1,
            "client_id": owner["id"],
            "payer_id": payer if rng.random() < 0.95 else None,
            "provider_id": rng.choice([1, 1, 1, 2]),
            "reseller_id": owner.get("resellers"),
            "status": status,
            "active_range": {"start": _iso(start), "end": _iso(end) if end else None},
            "created_at": _iso(created),
            "currency": rng.choice(
                [
                    {"id": 1, "char_code": "USD", "symbol": "$"},
                    {"id": 2, "char_code": "EUR", "symbol": "€"},
                ]
            ),
            "plan": {
                "id": pid * 100 + plan,
                "name": f"{pname} {PLAN_WORDS[(pid + plan) % len(PLAN_WORDS)]}",
            },
            "product": {"id": pid, "name": pname, "internal_name": internal},
        }


def generate(n: int, accounts: int = 10_000, seed: int = 1) -> dict[str, Any]:
    rng = random.Random(seed)
    doc = landscape(accounts, rng)
    doc["addendums"] = list(addendums(n, doc, rng))
    return doc


def write(n: int, accounts: int, seed: int, out: IO[str]) -> None:
    """Streams the document: a million addendums never sit in memory as one string."""
    rng = random.Random(seed)
    doc = landscape(accounts, rng)
    out.write("{\n")
    for key, value in doc.items():
        out.write(f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False)},\n")
    out.write('"addendums": [\n')
    for i, record in enumerate(addendums(n, doc, rng)):
        out.write(("," if i else "") + json.dumps(record, ensure_ascii=False) + "\n")
    out.write("]}\n")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("n", type=int, help="number of addendums")
    parser.add_argument("--accounts", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-o", "--output", help="file (default: standard output)")
    args = parser.parse_args()
    if args.accounts < RESELLERS + 3:
        parser.error(f"--accounts must be at least {RESELLERS + 3}")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            write(args.n, args.accounts, args.seed, out)
    else:
        write(args.n, args.accounts, args.seed, sys.stdout)


if __name__ == "__main__":
    main()
