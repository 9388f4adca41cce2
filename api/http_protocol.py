"""The web's HTTP protocol: uvicorn's own, with AutoMem's error envelope on a request it cannot parse.

uvicorn answers a request it cannot parse (raw bytes outside ASCII in the URL, a request line
or header past the parser's limits) itself, before the app sees it, with a plain-text 400.
Clients of the AutoMem API read every error as ``{"status": "error", "code": N, "message":
"..."}``; these protocols give that answer the same shape. The web is started with
``uvicorn --http api.http_protocol:EnvelopeProtocol`` (``ops.serve.WEB_HTTP_PROTOCOL``), which follows
uvicorn's ``auto`` choice: httptools where it is installed, else h11.
"""

from __future__ import annotations

import asyncio

import h11
import orjson
from uvicorn.protocols.http.h11_impl import H11Protocol

UNPARSEABLE = ("the request could not be parsed as HTTP: send the URL percent-encoded (ASCII only), "
               "and headers within the server's limits")


def envelope_body(reason: str) -> bytes:
    return orjson.dumps({"status": "error", "code": 400, "message": f"{reason.rstrip('.')}: {UNPARSEABLE}"})


class H11EnvelopeProtocol(H11Protocol):
    def send_400_response(self, msg: str) -> None:
        body = envelope_body(msg)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                   (b"connection", b"close")]
        for event in (h11.Response(status_code=400, headers=headers, reason=b"Bad Request"), h11.Data(data=body),
                      h11.EndOfMessage()):
            self.transport.write(self.conn.send(event))
        self.transport.close()


def _httptools_protocol() -> type[asyncio.Protocol]:
    from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

    class HttpToolsEnvelopeProtocol(HttpToolsProtocol):
        def send_400_response(self, msg: str) -> None:
            body = envelope_body(msg)
            head = [STATUS_LINE[400]]
            head += [name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers]
            head += [b"content-type: application/json\r\n", b"content-length: %d\r\n" % len(body),
                     b"connection: close\r\n\r\n"]
            self.transport.write(b"".join(head) + body)
            self.transport.close()

    return HttpToolsEnvelopeProtocol


EnvelopeProtocol: type[asyncio.Protocol]
try:
    import httptools  # noqa: F401  (uvicorn's "auto" picks it when installed)
except ImportError:  # pragma: no cover
    EnvelopeProtocol = H11EnvelopeProtocol
else:
    EnvelopeProtocol = _httptools_protocol()
