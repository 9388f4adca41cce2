"""FastAPI dependencies: the process's objects, built in the lifespan and read from app.state.

They are ``async def`` although they never await: FastAPI runs a plain ``def`` dependency in
its thread pool, and these few reads would cost a thread hop each on every request: the
largest per-request cost of the single-write path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, TypeVar

from fastapi import Request

from pipeline.config import Settings
from pipeline.errors import MempipeError, Unavailable

T = TypeVar("T")

if TYPE_CHECKING:
    from api.writes import WritePath
    from pipeline.query import RecallEngine
    from pipeline.services import Services


async def get_settings_dep(request: Request) -> Settings:
    return request.app.state.settings


async def get_services(request: Request) -> "Services":
    return request.app.state.services


async def get_writes(request: Request) -> "WritePath":
    return request.app.state.writes


async def get_engine(request: Request) -> "RecallEngine":
    return request.app.state.engine


def get_limits(request: Request):
    """Input limits; the embedding size is the live collection's (a dimension migration switches it)."""
    limits = request.app.state.limits
    size = request.app.state.services.vector_size
    return limits if limits.vector_size == size else limits.model_copy(update={"vector_size": size})


def graph_call(call: Callable[[], T]) -> T:
    """Run a graph call for a route: a store failure becomes 503, our own errors pass through."""
    try:
        return call()
    except MempipeError:
        raise
    except Exception as exc:
        raise Unavailable(f"graph database unavailable ({type(exc).__name__})") from None
