"""The MCP endpoint: an MCP server over streamable HTTP, mounted at ``/mcp`` of the app.

Stateless JSON-response mode: each POST is answered on its own, with no session to keep, so
any web process behind a load balancer can answer any call. The endpoint accepts exactly the
tokens the REST API accepts (Bearer, X-API-Key, ?api_key=) and answers a missing or wrong
one with the same 401 envelope.
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from pydantic import ValidationError as PydanticValidationError
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from api.auth import api_token_ok, presented_token
from api.errors import envelope
from api.mcp.recall_format import BudgetExceeded
from api.mcp.rest import Caller, RestClient, RestError
from api.mcp.tools import TOOLS, ToolSpec
from pipeline.config import Settings
from pipeline.errors import MempipeError

log = logging.getLogger("mempipe.mcp")

INSTRUCTIONS = (
    "mempipe is long-term memory. Recall before you decide (recall_memory), store what is worth keeping "
    "(store_memory), link related memories (associate_memories), and fix or remove what is wrong "
    "(update_memory, delete_memory)."
)


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def _validation_message(exc: PydanticValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "arguments"
    return f"{where}: {first.get('msg', 'invalid value')}"


class _RequireApiToken:
    """The REST API's token check, in front of the MCP transport."""

    def __init__(self, app: ASGIApp, settings: Settings):
        self._app = app
        self._settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not api_token_ok(Request(scope), self._settings):
            response = envelope(401, "missing or invalid API token", {"WWW-Authenticate": "Bearer"})
            await response(scope, receive, send)
            return
        await self._app(scope, receive, send)


class McpEndpoint:
    """Built once per app; ``run()`` belongs in the app's lifespan."""

    def __init__(self, settings: Settings, app: ASGIApp, tools: tuple[ToolSpec, ...] = TOOLS):
        self._settings = settings
        self._app = app  # the REST routes the tools call, in-process
        self._tools = {tool.name: tool for tool in tools}
        self._rest: RestClient | None = None
        server = Server(
            "mempipe",
            version="0.1.0",
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        # No transport security of the SDK's own: api.guard checks Host, Origin and the body's
        # type for every route, /mcp included, with the allowed names the rest of the API uses.
        self._manager = StreamableHTTPSessionManager(
            app=server, stateless=True, json_response=True,
            max_request_body_size=settings.max_request_bytes,
        )
        self.asgi: ASGIApp = _RequireApiToken(StreamableHTTPASGIApp(self._manager), settings)

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        self._rest = RestClient(self._app)
        try:
            async with self._manager.run():
                yield
        finally:
            await self._rest.aclose()
            self._rest = None

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool.describe() for tool in self._tools.values()])

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = self._tools.get(params.name)
        if tool is None:
            return _error(f"unknown tool {params.name!r}; tools: {', '.join(self._tools)}")
        try:
            args = tool.args.model_validate(params.arguments or {})
        except PydanticValidationError as exc:
            return _error(_validation_message(exc))
        request = ctx.request if isinstance(ctx.request, Request) else None
        caller = Caller(
            token=presented_token(request) if request is not None else None,
            request_id=request.headers.get("x-request-id") if request is not None else None,
        )
        assert self._rest is not None, "McpEndpoint.run() is not active"
        try:
            output = await tool.handler(args, caller, self._rest, self._settings.automem_recall_token_budget)
        except RestError as exc:
            return _error(f"{exc.status}: {exc.message}")
        except (MempipeError, BudgetExceeded) as exc:
            return _error(str(exc))
        except Exception:
            log.exception("MCP tool %s failed", tool.name)
            return _error("internal error")
        return types.CallToolResult(
            content=[types.TextContent(text=text) for text in output.texts],
            structured_content=output.structured,
        )
