"""Authentication as AutoMem does it: Bearer, X-API-Key or ?api_key=; admin adds X-Admin-Token."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Request

from api.deps import get_settings_dep
from pipeline.config import Settings
from pipeline.errors import Forbidden, Unauthorized


def presented_token(request: Request) -> str | None:
    """The API token the caller sent, by any of the three ways AutoMem accepts."""
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return request.headers.get("x-api-key") or request.query_params.get("api_key")


def _matches(presented: str | None, expected: str) -> bool:
    # Constant-time comparison on bytes, so timing does not reveal how much of a token matched.
    return presented is not None and hmac.compare_digest(presented.encode(), expected.encode())


def api_token_ok(request: Request, settings: Settings) -> bool:
    """True when no token is configured or the caller presented it (REST and MCP alike)."""
    expected = settings.automem_api_token
    return not expected or _matches(presented_token(request), expected)


def check_api_token(request: Request, settings: Settings) -> None:
    if not api_token_ok(request, settings):
        raise Unauthorized("missing or invalid API token")


# The dependencies are ``async def`` so FastAPI does not send them to its thread pool
# (see api.deps): they only compare strings.
async def require_api_token(request: Request, settings: Annotated[Settings, Depends(get_settings_dep)]) -> None:
    check_api_token(request, settings)


def admin_token_ok(request: Request, settings: Settings) -> bool:
    """True when an admin token is configured and the caller presented it."""
    expected = settings.admin_api_token
    presented = request.headers.get("x-admin-token") or request.headers.get("x-admin-api-key")
    return bool(expected) and _matches(presented, expected)


def check_admin_token(request: Request, settings: Settings, what: str = "admin routes") -> None:
    """403 unless the admin token was presented (the API token is checked before)."""
    if not settings.admin_api_token:
        raise Forbidden(f"{what} are disabled: ADMIN_API_TOKEN is not set")
    if not admin_token_ok(request, settings):
        raise Forbidden(f"{what} need the admin token (X-Admin-Token)")


async def require_admin_token(request: Request, settings: Annotated[Settings, Depends(get_settings_dep)]) -> None:
    check_api_token(request, settings)
    check_admin_token(request, settings)


ApiAuth = Depends(require_api_token)
AdminAuth = Depends(require_admin_token)
