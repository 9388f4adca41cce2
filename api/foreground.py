"""Marks the requests that the web's background vector work gives way to (pipeline.foreground).

Recall and ``/health`` are marked from their arrival to their answer: the wait for the GIL
they would otherwise share with an import's upserts is spent by the background work instead.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from pipeline.foreground import Foreground

FOREGROUND_PATHS = frozenset({"/recall", "/health"})


class ForegroundRequests:
    def __init__(self, app: ASGIApp, foreground: Foreground, paths: frozenset[str] = FOREGROUND_PATHS):
        self.app = app
        self.foreground = foreground
        self.paths = paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "GET" or scope.get("path") not in self.paths:
            await self.app(scope, receive, send)
            return
        with self.foreground.request():
            await self.app(scope, receive, send)
