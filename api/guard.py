"""Requests a browser could have been made to send, refused before any route sees them.

An API on 127.0.0.1 is out of other machines' reach but not out of a web page's: a page can
point a name it controls at 127.0.0.1 (DNS rebinding) and then read the answers, and any
page can send "simple" cross-site requests (``text/plain`` or form bodies, no custom
header), which need no CORS permission. With no token (allowed on loopback) either one is
the whole API. So every request, ``POST /memory``'s fast path and ``/mcp`` included, must:

- **reach a loopback interface under a loopback name** (``127.0.0.1``, ``localhost``,
  ``[::1]``) or one listed in ``ALLOWED_HOSTS``: a rebound name is refused (421). Requests
  on other interfaces carry the token, which a page cannot know.
- **come from no other site**: an ``Origin`` header (browsers send it on every cross-site
  request that is not a GET) must be this server's own, or a name in ``ALLOWED_HOSTS`` (403).
  Non-browser clients send none.
- **declare its body**: a request with a body must say ``application/json`` (or the upload
  type its route takes), which a page can send cross-site only with CORS permission, never
  given here (415).

And a server with no token refuses whatever reached it through a non-loopback interface
(403): the start-up refusal (``api.bind``) cannot see every way a server may be started.
"""

from __future__ import annotations

import ipaddress
from typing import Iterable, Mapping
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from api.errors import envelope
from pipeline.config import Settings, is_loopback

JSON = frozenset({"application/json"})


def interface_kind(server_host: str) -> bool | None:
    """True for a loopback address, False for another address, None for no address at all
    (a test client's made-up server name, an in-process transport)."""
    try:
        ipaddress.ip_address(server_host.strip("[]"))
    except ValueError:
        return None
    return is_loopback(server_host)


def host_name(authority: str) -> str:
    """The name part of a Host header (``[::1]:8001`` -> ``::1``, ``Example.com:80`` -> ``example.com``)."""
    authority = authority.strip().lower()
    if authority.startswith("["):
        return authority[1:].split("]", 1)[0]
    return authority.rsplit(":", 1)[0] if authority.count(":") == 1 else authority


def parse_allowed_hosts(setting: str | None) -> frozenset[str]:
    return frozenset(host_name(entry) for entry in (setting or "").split(",") if entry.strip())


def media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def _accepts(media: str, accepted: frozenset[str]) -> bool:
    # ``+json`` types (merge-patch and the like) are JSON too, and just as preflighted.
    return media in accepted or (accepted is JSON and media.startswith("application/") and media.endswith("+json"))


class RequestGuard:
    """ASGI middleware applying the rules above; ``upload_types`` maps a path to the body types it takes."""

    def __init__(self, app: ASGIApp, settings: Settings, upload_types: Mapping[str, Iterable[str]] | None = None):
        self.app = app
        self.tokenless = not settings.automem_api_token
        self.allowed_hosts = parse_allowed_hosts(settings.allowed_hosts)
        self.upload_types = {path: frozenset(types) for path, types in (upload_types or {}).items()}
        # Parsing addresses is most of the guard's cost; a server has few local addresses and
        # clients use few names, so both answers are kept. Bounded: random Host headers cannot grow them.
        self._interfaces: dict[str, bool | None] = {}
        self._names: dict[str, bool] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            problem = self.problem(scope)
            if problem is not None:
                await envelope(*problem)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _known_host(self, host: str) -> bool:
        known = self._names.get(host)
        if known is None:
            name = host_name(host)
            known = is_loopback(name) or name in self.allowed_hosts
            self._names = _remember(self._names, host, known)
        return known

    def _interface(self, scope: Scope) -> bool | None:
        server = scope.get("server")
        if not server or not isinstance(server[0], str):
            return None  # a unix socket, or no server at all
        kind = self._interfaces.get(server[0], ...)
        if kind is ...:
            kind = interface_kind(server[0])
            self._interfaces = _remember(self._interfaces, server[0], kind)
        return kind

    def problem(self, scope: Scope) -> tuple[int, str] | None:
        """(status, message) for a request to refuse, or None."""
        headers: dict[bytes, bytes] = {}
        for key, value in scope["headers"]:
            if key in (b"host", b"origin", b"content-type", b"content-length", b"transfer-encoding"):
                headers[key] = value
        host = headers.get(b"host", b"").decode("latin-1")
        loopback = self._interface(scope)  # the address the connection arrived on
        if loopback is False:
            if self.tokenless:
                return 403, ("this server has no API token and serves only loopback clients: "
                             "its operator must set AUTOMEM_API_TOKEN to serve other interfaces")
        elif loopback and host and not self._known_host(host):
            return 421, (f"Host header {host!r} is not a name this server answers to (127.0.0.1, localhost, "
                         "[::1] or ALLOWED_HOSTS): a web page may not reach it under another name")
        origin = headers.get(b"origin")
        if origin is not None:
            refusal = self._origin_problem(origin.decode("latin-1"), host)
            if refusal:
                return 403, refusal
        if headers.get(b"content-length", b"0") not in (b"0", b"") or b"transfer-encoding" in headers:
            accepted = self.upload_types.get(scope["path"], JSON)
            declared = media_type(headers.get(b"content-type", b"").decode("latin-1"))
            if not _accepts(declared, accepted):
                expected = " or ".join(sorted(accepted))
                return 415, f"Content-Type: expected {expected} for the request body, got {declared or 'none'}"
        return None

    def _origin_problem(self, origin: str, host: str) -> str | None:
        parts = urlsplit(origin.strip())
        if parts.netloc and (parts.netloc.lower() == host.strip().lower() or host_name(parts.netloc) in self.allowed_hosts):
            return None
        return (f"Origin {origin!r} is another site: browsers may not call this API across sites "
                "(add the name to ALLOWED_HOSTS if it is this server's own)")


def _remember(cache: dict, key: str, value) -> dict:
    if len(cache) >= CACHE_SIZE:
        cache = {}
    cache[key] = value
    return cache


CACHE_SIZE = 256
