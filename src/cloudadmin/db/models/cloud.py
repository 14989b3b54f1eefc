"""Cloud resources: projects, regions, listeners, policies, prices, subscriptions."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from cloudadmin.db.base import Base
from cloudadmin.db.models._fk import AccountRef, fk
from cloudadmin.db.types import FalseByDefault, GivenIntKey, IntKey, JSONType, LongText, Str255


class Region(Base):
    __tablename__ = "regions"

    id: Mapped[GivenIntKey]
    name: Mapped[Str255]


class Project(Base):
    __tablename__ = "projects"

    id: Mapped[IntKey]
    client_id: Mapped[AccountRef]
    name: Mapped[Str255]


class Listener(Base):
    __tablename__ = "listeners"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    project_id: Mapped[int] = mapped_column(Integer, fk("projects.id"))
    region_id: Mapped[int] = mapped_column(Integer, fk("regions.id"))
    name: Mapped[str] = mapped_column(String(63))
    allowed_cidrs: Mapped[list[str] | None] = mapped_column(JSONType)
    connection_limit: Mapped[int] = mapped_column(Integer, default=-1)
    creator_task_id: Mapped[str | None] = mapped_column(String(36))
    insert_headers: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    load_balancer_id: Mapped[str | None] = mapped_column(String(36))
    operating_status: Mapped[str] = mapped_column(String(20))
    pool_count: Mapped[int | None] = mapped_column(Integer, default=0)
    protocol: Mapped[str] = mapped_column(String(20))
    protocol_port: Mapped[int]
    provisioning_status: Mapped[str] = mapped_column(String(20))
    secret_id: Mapped[Str255 | None]
    sni_secret_id: Mapped[list[str] | None] = mapped_column(JSONType)
    stats: Mapped[dict[str, int]] = mapped_column(JSONType, default=dict)
    task_id: Mapped[str | None] = mapped_column(String(36))
    timeout_client_data: Mapped[int | None]
    timeout_member_connect: Mapped[int | None]
    timeout_member_data: Mapped[int | None]
    user_list: Mapped[list[dict[str, str]]] = mapped_column(JSONType, default=list)


class LifecyclePolicy(Base):
    __tablename__ = "lifecycle_policies"

    id: Mapped[IntKey]
    project_id: Mapped[int] = mapped_column(Integer, fk("projects.id"))
    region_id: Mapped[int] = mapped_column(Integer, fk("regions.id"))
    name: Mapped[Str255]
    action: Mapped[str] = mapped_column(String(50), default="volume_snapshot")
    status: Mapped[str] = mapped_column(String(20))
    user_id: Mapped[int]
    schedules: Mapped[list[dict[str, Any]]] = mapped_column(JSONType, default=list)
    volumes: Mapped[list[dict[str, str]]] = mapped_column(JSONType, default=list)


class PriceCatalogue(Base):
    """Per-region prices; decimals are kept as strings so nothing is rounded."""

    __tablename__ = "price_catalogues"

    region_id: Mapped[int] = mapped_column(Integer, fk("regions.id"), primary_key=True)
    currency_code: Mapped[str] = mapped_column(String(3))
    flavors: Mapped[dict[str, str]] = mapped_column(JSONType, default=dict)
    volume_types: Mapped[dict[str, str]] = mapped_column(JSONType, default=dict)
    public_ipv4_per_hour: Mapped[str] = mapped_column(String(40), default="0")
    tax_percent: Mapped[str] = mapped_column(String(40), default="0")
    discount_percent: Mapped[str] = mapped_column(String(40), default="0")


class AmqpSubscription(Base):
    __tablename__ = "amqp_subscriptions"

    id: Mapped[IntKey]
    client_id: Mapped[int] = mapped_column(Integer, fk("clients.id"), unique=True)
    # The whole connection string, encrypted (it carries the broker password).
    connection_string_encrypted: Mapped[LongText]
    exchange: Mapped[Str255 | None]
    routing_key: Mapped[Str255 | None]
    receive_child_client_events: Mapped[FalseByDefault]
