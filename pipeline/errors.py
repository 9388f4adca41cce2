"""One root exception and a few typed subclasses, mapped to HTTP in one place (api.errors)."""

from __future__ import annotations


class MempipeError(Exception):
    """Root of every error mempipe raises on purpose."""

    status_code = 500

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class ValidationError(MempipeError):
    """The caller sent something we cannot accept; the message names the field."""

    status_code = 400


class PayloadTooLarge(ValidationError):
    status_code = 413


class NotFound(MempipeError):
    status_code = 404


class Conflict(MempipeError):
    """The request is valid but clashes with the memory's current state."""

    status_code = 409


class Unauthorized(MempipeError):
    status_code = 401


class Forbidden(MempipeError):
    status_code = 403


class Overloaded(MempipeError):
    """The pipeline is behind: the caller should retry after ``retry_after`` seconds."""

    status_code = 429

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


class Unavailable(MempipeError):
    """A store or the broker cannot be reached right now."""

    status_code = 503


class ConfigurationError(MempipeError):
    """The service cannot start with this configuration (raised at boot, not per request)."""


class VectorSizeMismatch(ConfigurationError):
    pass
