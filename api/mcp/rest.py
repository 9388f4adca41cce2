"""mempipe's own REST API, called in-process, as the caller.

The MCP tools go through the same routes, validation, auth and error envelope as any REST
client: an httpx client on an ASGI transport to the very app serving ``/mcp``, forwarding the
caller's token and request id. A route that does not exist (yet) answers as it would over
HTTP, and the tool reports that answer as its error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
from starlette.types import ASGIApp

# Never resolved: the ASGI transport hands requests straight to the app.
INTERNAL_BASE_URL = "http://mempipe.internal"


@dataclass(frozen=True)
class Caller:
    """Who the MCP request came from: what gets forwarded to the REST routes."""

    token: str | None = None
    request_id: str | None = None

    def headers(self) -> dict[str, str]:
        headers = {}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.request_id:
            headers["X-Request-ID"] = self.request_id
        return headers


class RestError(Exception):
    """The REST route answered with an error; ``message`` is its envelope's message."""

    def __init__(self, status: int, message: str, path: str):
        super().__init__(f"{status} from {path}: {message}")
        self.status = status
        self.message = message
        self.path = path


@dataclass(frozen=True)
class RestAnswer:
    status: int
    body: dict[str, Any]


class RestClient:
    def __init__(self, app: ASGIApp, timeout: float = 60.0):
        # raise_app_exceptions=False: an unexpected error comes back as the envelope's 500,
        # exactly what an HTTP client would see.
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        self._client = httpx.AsyncClient(transport=transport, base_url=INTERNAL_BASE_URL, timeout=timeout)

    async def call(self, method: str, path: str, caller: Caller, *, params: Any = None, json: Any = None,
                   ok_statuses: tuple[int, ...] = ()) -> RestAnswer:
        response = await self._client.request(method, path, params=params, json=json, headers=caller.headers())
        try:
            body = response.json()
        except ValueError:
            body = {"message": response.text or response.reason_phrase}
        if not isinstance(body, dict):
            body = {"value": body}
        if response.status_code >= 400 and response.status_code not in ok_statuses:
            raise RestError(response.status_code, str(body.get("message") or response.reason_phrase), path)
        return RestAnswer(response.status_code, body)

    async def aclose(self) -> None:
        await self._client.aclose()
