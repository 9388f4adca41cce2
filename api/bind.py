"""Where the web process really listens, and the refusal to serve it unauthenticated.

The ``HOST`` setting is only one way to choose the interface: the Procfile and the Docker
image pass ``--host`` to uvicorn's command line, and uvicorn also reads ``UVICORN_HOST``,
``--uds`` and ``--fd``. When uvicorn's command line started this process, its own parser
(reading the same arguments and environment it did) says what it binds; otherwise ``HOST``
does. A server that starts the app some other way (gunicorn, ``uvicorn.run``) is not seen
here: ``api.guard`` still refuses, per request, any request that reached a tokenless server
through a non-loopback interface.
"""

from __future__ import annotations

import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from pipeline.config import Settings, is_loopback


@dataclass(frozen=True)
class Bind:
    """The interface served (``None``: a unix socket) and how it was given, for messages."""

    host: str | None
    given_by: str

    @property
    def local_only(self) -> bool:
        # A unix socket is reachable only by processes on this machine, like loopback.
        return self.host is None or is_loopback(self.host)


def _run_by_uvicorn_cli(argv: Sequence[str]) -> bool:
    if not argv:
        return False
    program = Path(argv[0])
    return program.name == "uvicorn" or (program.name == "__main__.py" and program.parent.name == "uvicorn")


def _fd_host(fd: int) -> str:
    """The address an inherited listening socket is bound to; unknown counts as public."""
    try:
        sock = socket.socket(fileno=fd)
    except OSError:
        return "an unknown interface"
    try:
        if sock.family == socket.AF_UNIX:
            return ""
        return str(sock.getsockname()[0])
    except OSError:
        return "an unknown interface"
    finally:
        sock.detach()  # the server owns the descriptor: never close it


def uvicorn_cli_bind(argv: Sequence[str]) -> Bind | None:
    """What uvicorn's command line in ``argv`` binds (uds, then fd, then host), or None."""
    if not _run_by_uvicorn_cli(argv):
        return None
    from uvicorn.main import main as uvicorn_command

    try:
        params = uvicorn_command.make_context("uvicorn", list(argv[1:]), resilient_parsing=True).params
    except Exception:
        return Bind("an unparsed command line", "uvicorn's command line")
    if params.get("uds"):
        return Bind(None, f"uvicorn --uds {params['uds']}")
    if params.get("fd") is not None:
        host = _fd_host(params["fd"])
        return Bind(host or None, f"uvicorn --fd {params['fd']}")
    host = params.get("host") or ""
    on_command_line = any(arg == "--host" or arg.startswith("--host=") for arg in argv[1:])
    if on_command_line or not os.environ.get("UVICORN_HOST"):
        return Bind(host, f"uvicorn --host {host}")
    return Bind(host, f"UVICORN_HOST={host}")


def served_bind(settings: Settings, argv: Sequence[str] | None = None) -> Bind:
    """The interface this web process serves: uvicorn's command line when it started us, else HOST."""
    found = uvicorn_cli_bind(sys.argv if argv is None else argv)
    return found or Bind(settings.host, f"HOST={settings.host}")


def unauthenticated_exposure(bind: Bind, settings: Settings) -> str | None:
    """Why this process must not start, or None: a public interface with no API token."""
    if bind.local_only or settings.automem_api_token:
        return None
    return (f"{bind.given_by} would serve the API (REST and MCP) beyond this machine without a token: "
            "set AUTOMEM_API_TOKEN (and ADMIN_API_TOKEN), or bind to 127.0.0.1")
