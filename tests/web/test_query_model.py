"""web/query_model.py: a query-parameter model validated in one call, as FastAPI would."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import Depends, FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from cloudadmin.web.query_model import query_model, query_model_parameters


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: list[str] | None = None
    limit: int = Field(10, ge=1, le=100)


def probe_app() -> FastAPI:
    app = FastAPI()

    @app.get("/p")
    async def endpoint(p: Params = Depends(query_model(Params))) -> dict[str, object]:  # noqa: B008
        return p.model_dump()

    @app.exception_handler(RequestValidationError)
    async def errors(_request: object, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"locs": [list(e["loc"]) for e in exc.errors()]}, status_code=400)

    return app


@pytest.fixture
async def probe() -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=probe_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        yield client


class TestQueryModel:
    async def test_a_list_takes_every_value_a_scalar_the_last(self, probe: httpx.AsyncClient):
        r = await probe.get("/p?status=a&limit=5&status=b&limit=7")
        assert r.json() == {"status": ["a", "b"], "limit": 7}

    async def test_defaults_when_absent(self, probe: httpx.AsyncClient):
        assert (await probe.get("/p")).json() == {"status": None, "limit": 10}

    async def test_errors_are_located_in_the_query(self, probe: httpx.AsyncClient):
        r = await probe.get("/p?limit=0&other=1")
        assert r.status_code == 400
        assert sorted(r.json()["locs"]) == [["query", "limit"], ["query", "other"]]

    def test_documents_the_parameters_as_fastapi_does(self):
        params = {p["name"]: p for p in query_model_parameters(Params)}
        assert set(params) == {"status", "limit"}
        assert params["limit"]["schema"]["maximum"] == 100
        assert params["status"]["schema"]["anyOf"][0]["type"] == "array"
