"""Query strings decoded faster where they are long: commas arrive percent-encoded.

A recall can carry its query embedding in the query string: ~380 numbers joined by commas,
which every client library sends as ``%2C``. Starlette decodes the string with the standard
library, whose unquoting walks each escape in Python, several times faster once the commas
are plain. Turning ``%2C`` back into ``,`` before
anything parses the string changes no decoded value: a literal ``%`` always travels as
``%25``, so every ``%2C`` is an escaped comma, and a comma needs no escape inside a value.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send


class PlainCommas:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            query = scope.get("query_string", b"")
            if b"%2" in query:
                scope["query_string"] = query.replace(b"%2C", b",").replace(b"%2c", b",")
        await self.app(scope, receive, send)
