"""The routers of the cloud domain, included by cloudadmin.app."""

from __future__ import annotations

from fastapi import APIRouter

routers: list[APIRouter] = []
