"""The OpenAPI schema and its two pages (``/openapi.json``, ``/docs``, ``/redoc``), behind the API token.

They describe every route, limit and setting-dependent size of this deployment, so they get
the same token as the routes themselves (with no token configured the server is loopback-only
and they are open like the rest). A browser cannot send a header when it opens a page, so a
page opened as ``/docs?api_key=TOKEN`` loads the schema with the same ``api_key``.
"""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse

from api.auth import ApiAuth
from api.responses import ORJSONResponse

SCHEMA_PATH = "/openapi.json"

router = APIRouter(dependencies=[ApiAuth], include_in_schema=False)


def _schema_url(request: Request) -> str:
    url = request.scope.get("root_path", "").rstrip("/") + SCHEMA_PATH
    key = request.query_params.get("api_key")
    return f"{url}?{urlencode({'api_key': key})}" if key else url


@router.get(SCHEMA_PATH)
async def openapi_schema(request: Request) -> ORJSONResponse:
    return ORJSONResponse(request.app.openapi())


@router.get("/docs")
async def swagger_page(request: Request) -> HTMLResponse:
    return get_swagger_ui_html(openapi_url=_schema_url(request), title=f"{request.app.title} - Swagger UI")


@router.get("/redoc")
async def redoc_page(request: Request) -> HTMLResponse:
    return get_redoc_html(openapi_url=_schema_url(request), title=f"{request.app.title} - ReDoc")
