"""Reading /metrics in tests: the Prometheus text parsed by prometheus_client's parser."""

from __future__ import annotations

from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families


class Samples:
    def __init__(self, text: str) -> None:
        self.text = text
        self.values: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                self.values[(s.name, tuple(sorted(s.labels.items())))] = s.value

    def get(self, name: str, **labels: Any) -> float:
        """The sample's value; 0 when there is none (a counter never incremented)."""
        key = (name, tuple(sorted((k, str(v)) for k, v in labels.items())))
        return self.values.get(key, 0.0)

    def has(self, name: str, **labels: Any) -> bool:
        return (name, tuple(sorted((k, str(v)) for k, v in labels.items()))) in self.values

    def labels_of(self, name: str) -> list[dict[str, str]]:
        return [dict(labels) for (n, labels) in self.values if n == name]


async def scrape(client: httpx.AsyncClient) -> Samples:
    r = await client.get("/metrics")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    return Samples(r.text)


def scrape_sync(base: str) -> Samples:
    r = httpx.get(f"{base}/metrics", timeout=30)
    assert r.status_code == 200, r.text
    return Samples(r.text)
