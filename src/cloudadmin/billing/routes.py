"""The routers of the billing domain, included by cloudadmin.app."""

from __future__ import annotations

from fastapi import APIRouter

routers: list[APIRouter] = []
