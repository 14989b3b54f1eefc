"""FastAPI's own OpenTelemetry stays off whatever the environment says (app.NO_TELEMETRY):
the service is configured by its Settings alone."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest
from opentelemetry import metrics, trace

from cloudadmin.app import create_app
from cloudadmin.config import Settings


async def started(app: Any) -> dict[str, Any]:
    """The message the app answers the ASGI lifespan's startup with (then shut down)."""
    inbox: list[dict[str, Any]] = [{"type": "lifespan.startup"}]
    answers: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return inbox.pop(0) if inbox else {"type": "lifespan.shutdown"}

    async def send(message: dict[str, Any]) -> None:
        answers.append(message)

    await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send)
    return answers[0]


class TestFastapiTelemetry:
    async def test_otel_variables_configure_nothing(
        self, settings: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        """FastAPI alone would set up OTLP export to this endpoint at startup (here,
        without the OpenTelemetry SDK, it warns that it cannot)."""
        monkeypatch.setenv("FASTAPI_OTEL_AUTO_CONFIGURE", "true")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
        with caplog.at_level(logging.DEBUG, logger="fastapi"):
            answer = await started(create_app(settings))
        assert answer == {"type": "lifespan.startup.complete"}
        assert [r.getMessage() for r in caplog.records if r.name.startswith("fastapi")] == []

    async def test_a_request_asks_no_tracer_provider(
        self, settings: Settings, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """FastAPI alone looks for a configured provider on every request."""
        asked: list[str] = []
        for module, name in ((trace, "get_tracer_provider"), (metrics, "get_meter_provider")):
            original = getattr(module, name)

            def counted(original: Any = original, name: str = name) -> Any:
                asked.append(name)
                return original()

            monkeypatch.setattr(module, name, counted)
        app = create_app(settings)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            assert (await client.get("/healthz")).status_code == 200
        assert asked == []
