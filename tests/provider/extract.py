"""Extracts, from the provider's published OpenAPI documents, the operations this service
implements (and those being added), with every component they reference, into small JSON
files beside this script; see README.md.

    PYTHONPATH=src python tests/provider/extract.py PROVIDER_DIR_OR_YAML...

Given a folder, it reads the four documents named in README.md (each at its commit: SOURCE's,
or LATER's for the documents it names). The operations taken are
those of this service's own OpenAPI plus PLANNED; each output file also lists every operation
of its document (``index``), so a test can tell which of ours have a provider counterpart.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
DOCUMENTS = ("iam_api", "iam_reseller_api", "billing_reseller_api", "cloud_api")
METHODS = ("get", "put", "post", "delete", "patch")
SOURCE = {
    "repository": "G-Core/product-documentation",
    "folder": "api-reference/services_documented/",
    "commit": "fb52298a4bd7048edf5bd823b4847f332db66ab0",
    "date": "2026-02-26",
}
# Documents taken from a later commit than SOURCE's: they publish operations this service
# serves that the earlier one lacks (iam_api.yaml: the /iam/v2/... token paths).
LATER = {
    "iam_api": {"commit": "b4544e8f28365723c38e56886f238013cb0d0569", "date": "2026-05-15"},
}
# Operations other branches add (issue 14); taken even before this service has them.
PLANNED = {
    ("GET", "/iam/clients"), ("GET", "/iam/clients/me"), ("GET", "/iam/clients/{clientId}"),
    ("GET", "/iam/activity_log/requests/{id}"), ("GET", "/billing/org/v1/addendums/{id}"),
    ("GET", "/iam/users"), ("GET", "/iam/users/{userId}"), ("PATCH", "/iam/users/{userId}"),
    ("DELETE", "/iam/users/{userId}"),
    ("GET", "/iam/clients/{clientId}/client-users/{userId}"),
    ("PUT", "/iam/clients/{clientId}/client-users/{userId}"),
    ("DELETE", "/iam/clients/{clientId}/client-users/{userId}"),
    ("GET", "/iam/admin/sellers"), ("DELETE", "/iam/admin/sellers/{sellerId}"),
    ("GET", "/cloud/v1/lifecycle_policy/{project_id}/{region_id}"),
    ("GET", "/cloud/v1/user_actions"),
    ("GET", "/iam/clients/{clientId}/tokens"), ("POST", "/iam/clients/{clientId}/tokens"),
    ("GET", "/iam/clients/{clientId}/tokens/{tokenId}"),
    ("DELETE", "/iam/clients/{clientId}/tokens/{tokenId}"),
    ("POST", "/cloud/v1/user_actions/subscribe"), ("POST", "/cloud/v1/user_actions/unsubscribe"),
    ("GET", "/cloud/v1/user_actions/subscriptions_list"),
}  # fmt: skip


def shape(path: str) -> str:
    """The path with its parameters' names left out: ours and the provider's may differ."""
    return re.sub(r"\{[^}]*\}", "{}", path)


def our_operations(spec: dict[str, Any] | None = None) -> set[tuple[str, str]]:
    """(METHOD, path) of this service's OpenAPI document: ``spec``, or one made here (the
    tests pass the one they share: making it costs a second of each test process's
    collection)."""
    if spec is None:
        from cloudadmin.app import create_app
        from cloudadmin.config import Settings

        app = create_app(Settings(database_url="sqlite+aiosqlite://", secret_key="extract"))
        spec = app.openapi()
    return {(m.upper(), p) for p, ops in spec["paths"].items() for m in ops if m in METHODS}


def references(node: Any) -> set[str]:
    found: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/components/"):
                found.add(ref)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def component(document: dict[str, Any], ref: str) -> Any:
    _, _, kind, name = ref.split("/", 3)
    return document["components"][kind][name]


def extract(document: dict[str, Any], wanted: set[str], name: str) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    index = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method not in METHODS:
                continue
            index.append(f"{method.upper()} {path}")
            if f"{method.upper()} {shape(path)}" in wanted:
                paths.setdefault(path, {})[method] = operation
    components: dict[str, dict[str, Any]] = {}
    todo, seen = references(paths), set()
    while todo:
        ref = todo.pop()
        if ref in seen:
            continue
        seen.add(ref)
        _, _, kind, key = ref.split("/", 3)
        body = component(document, ref)
        components.setdefault(kind, {})[key] = body
        todo |= references(body)
    return {
        "source": {**SOURCE, **LATER.get(name, {}), "file": f"{name}.yaml"},
        "openapi": document.get("openapi"),
        "index": sorted(index),
        "paths": paths,
        "components": {k: dict(sorted(v.items())) for k, v in sorted(components.items())},
    }


def main(arguments: list[str]) -> None:
    if not arguments:
        sys.exit(__doc__)
    files: list[Path] = []
    for argument in map(Path, arguments):
        files += [argument / f"{d}.yaml" for d in DOCUMENTS] if argument.is_dir() else [argument]
    wanted = {f"{m} {shape(p)}" for m, p in our_operations() | PLANNED}
    for file in files:
        document = yaml.safe_load(file.read_text(encoding="utf-8"))
        out = extract(document, wanted, file.stem)
        target = HERE / f"{file.stem}.json"
        target.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        count = sum(len(v) for v in out["paths"].values())
        print(f"{target.name}: {count} operations, {len(out['index'])} in the document")


if __name__ == "__main__":
    main(sys.argv[1:])
