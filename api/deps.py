"""FastAPI dependencies: the process's objects, built in the lifespan and read from app.state."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import Request

from pipeline.config import Settings

if TYPE_CHECKING:
    from api.writes import WritePath
    from pipeline.query import RecallEngine
    from pipeline.services import Services


def get_settings_dep(request: Request) -> Settings:
    return request.app.state.settings


def get_services(request: Request) -> "Services":
    return request.app.state.services


def get_writes(request: Request) -> "WritePath":
    return request.app.state.writes


def get_engine(request: Request) -> "RecallEngine":
    return request.app.state.engine
