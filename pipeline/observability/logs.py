"""Structured logs: one JSON object per line, with the request id on every line.

Every process (web, worker, clock) calls ``configure_logging`` once at start. Tokens never
reach a log: ``RedactSecrets`` masks ``api_key=`` query values and Authorization/API-key
header values in any message, whichever library logged it.
"""

from __future__ import annotations

import logging
import re

from pythonjsonlogger.orjson import OrjsonFormatter

from pipeline.config import Settings
from pipeline.observability.requestid import actor_name, message_id, request_id


def _spelled_any_way(name: str) -> str:
    """A pattern for ``name`` as a query-string key, each character literal or percent-encoded:
    the server decodes ``api%5Fkey`` to ``api_key`` and takes its value as the token, so the
    log must recognise it too."""
    def spellings(c: str) -> str:
        codes = {f"%{ord(c.lower()):02x}", f"%{ord(c.upper()):02x}"}  # the patterns ignore case
        return "|".join([re.escape(c), *sorted(codes)])

    return "".join(f"(?:{spellings(c)})" for c in name)


_QUERY_SECRET_KEYS = ("admin_api_key", "api_key", "token")
# The same keys with any character percent-encoded: slower than the literal pattern over a
# long query, so run only on texts holding a "%".
_ENCODED_KEY_PATTERN = re.compile(rf"(?i)((?:{'|'.join(map(_spelled_any_way, _QUERY_SECRET_KEYS))})=)[^&\s\"']+")

_SECRET_PATTERNS = (
    # ?api_key=...  &api_key=...  (and admin variants)
    (re.compile(rf"(?i)((?:{'|'.join(_QUERY_SECRET_KEYS)})=)[^&\s\"']+"), r"\1***"),
    # Authorization: Bearer ...   X-API-Key: ...   X-Admin-Token: ...
    (re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=\-]+"), r"\1***"),
    (re.compile(r"(?i)((?:x-api-key|x-admin-token|x-admin-api-key)[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]+"), r"\1***"),
)


# Every pattern above needs one of these words. Checking for them first keeps the common case
# cheap: the case-insensitive patterns over a recall's long query string (an embedding passed
# in) would otherwise be the largest single cost of the access log.
_SECRET_MARKERS = ("key", "token", "bearer")


# A percent-encoded letter, which can hide a marker (``%6Bey``). Only then do texts without a
# plain marker need the patterns: a query that merely encodes its commas stays cheap.
_ENCODED_LETTER = re.compile(r"%[46][1-9a-f]|%[57][0-9a]", re.IGNORECASE)


def _may_hold_secret(text: str) -> bool:
    lowered = text.lower()
    if any(marker in lowered for marker in _SECRET_MARKERS):
        return True
    return "%" in lowered and _ENCODED_LETTER.search(lowered) is not None


def redact(text: str) -> str:
    """``text`` with token-bearing query values and header values replaced by ``***``."""
    if not _may_hold_secret(text):
        return text
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    if "%" in text:
        text = _ENCODED_KEY_PATTERN.sub(r"\1***", text)
    return text


class RedactSecrets(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        return True


class TraceContext(logging.Filter):
    """Adds request_id (and, in a worker, the actor and message id) to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get()
        actor = actor_name.get()
        if actor is not None:
            record.actor = actor
            record.message_id = message_id.get()
        return True


class _MempipeJsonFormatter(OrjsonFormatter):
    """Marks handlers this module configured, so a second call changes nothing.

    orjson rather than the standard library's encoder: every process writes a line per request
    or per message, and orjson encodes a line in markedly less CPU."""


def configure_logging(settings: Settings, role: str) -> None:
    """Route every log record through the JSON (or text) format; idempotent per process.

    Existing root handlers keep their streams (a Dramatiq worker process logs into a pipe
    its parent reads) and get our formatter and filters; uvicorn's server messages take the
    same path, and its access log is silenced in favour of ours.
    """
    root = logging.getLogger()
    if any(isinstance(h.formatter, _MempipeJsonFormatter) or getattr(h, "_mempipe", False) for h in root.handlers):
        return
    if settings.log_format == "json":
        formatter: logging.Formatter = _MempipeJsonFormatter(
            ["levelname", "name", "message"],
            rename_fields={"levelname": "level", "name": "logger"},
            static_fields={"role": role},
            timestamp=True,
        )
    else:
        formatter = logging.Formatter("%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s")
    if not root.handlers:
        root.addHandler(logging.StreamHandler())
    for handler in root.handlers:
        handler.setFormatter(formatter)
        handler.addFilter(TraceContext())
        handler.addFilter(RedactSecrets())
        handler._mempipe = True  # type: ignore[attr-defined]
    root.setLevel(settings.log_level.upper())
    for name in ("uvicorn", "uvicorn.error"):
        server_logger = logging.getLogger(name)
        server_logger.handlers.clear()
        server_logger.propagate = True
    # The web's own access log (api.observability.AccessLog) replaces uvicorn's, which would
    # log every line twice and the raw query string with it.
    access = logging.getLogger("uvicorn.access")
    access.handlers.clear()
    access.propagate = False
