"""A small JSON-answering chat client for enrichment: rate-limited, retried, and honest.

The ``openai`` client talks to OpenAI or any compatible endpoint. Its own retries are off:
tenacity owns them, so every attempt first takes a slot from the rate limiter shared by all
workers (Dramatiq's window limiter on the broker's Redis). Any failure that survives the
retries is raised as ``LLMFailure`` with a short reason, and the caller falls back.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any, Callable

import orjson
from tenacity import RetryError, Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

if TYPE_CHECKING:
    import openai

# ``openai`` is imported where it is used: it takes seconds to import on a busy machine, and
# every worker process imports this module whether or not an LLM is configured.


def retryable_errors() -> tuple[type[Exception], ...]:
    """Transport trouble worth another try; a 4xx other than 429 (bad key, unknown model) is not."""
    import openai

    return (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError)


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


class LLMFailure(Exception):
    """The LLM gave no usable answer; ``reason`` says why in a few words."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class RateGate:
    """Waits (bounded) for a slot of a shared rate limiter."""

    def __init__(self, limiter, max_wait_s: float, poll_s: float = 0.05):
        self._limiter = limiter
        self._max_wait_s = max_wait_s
        self._poll_s = poll_s

    def wait(self) -> None:
        deadline = time.monotonic() + self._max_wait_s
        while True:
            with self._limiter.acquire(raise_on_failure=False) as acquired:
                if acquired:
                    return
            if time.monotonic() >= deadline:
                raise LLMFailure(f"rate limit: no slot within {self._max_wait_s:g}s")
            time.sleep(self._poll_s)


def build_rate_gate(redis_client, limit: int, window_s: int, max_wait_s: float) -> RateGate:
    from dramatiq.rate_limits import WindowRateLimiter
    from dramatiq.rate_limits.backends import RedisBackend

    limiter = WindowRateLimiter(RedisBackend(client=redis_client), "mempipe:ratelimit:llm", limit=limit, window=window_s)
    return RateGate(limiter, max_wait_s)


def parse_json_object(text: str | None) -> dict[str, Any]:
    """The reply as a JSON object (a ```json fence around it is tolerated)."""
    if not text or not text.strip():
        raise LLMFailure("malformed reply: empty")
    try:
        value = orjson.loads(_FENCE.sub("", text.strip()))
    except orjson.JSONDecodeError:
        raise LLMFailure("malformed reply: not JSON") from None
    if not isinstance(value, dict):
        raise LLMFailure("malformed reply: not a JSON object")
    return value


class ChatJSON:
    def __init__(self, client: "openai.OpenAI", gate: RateGate | None, max_attempts: int,
                 sleep: Callable[[float], None] = time.sleep):
        self._client = client
        self._gate = gate
        self._max_attempts = max_attempts
        self._sleep = sleep

    def _once(self, model: str, system: str, user: str, max_tokens: int) -> str | None:
        if self._gate is not None:
            self._gate.wait()
        response = self._client.chat.completions.create(
            model=model,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            temperature=0,
            max_tokens=max_tokens,
        )
        if not response.choices:
            raise LLMFailure("malformed reply: no choices")
        return response.choices[0].message.content

    def ask(self, model: str, system: str, user: str, max_tokens: int = 300) -> dict[str, Any]:
        import openai

        retrying = Retrying(
            stop=stop_after_attempt(self._max_attempts),
            wait=wait_exponential(multiplier=0.2, max=4),
            retry=retry_if_exception_type(retryable_errors()),
            sleep=self._sleep,
        )
        try:
            text = retrying(self._once, model, system, user, max_tokens)
        except RetryError as exc:
            raise LLMFailure(_describe(exc.last_attempt.exception())) from None
        except LLMFailure:
            raise
        except openai.OpenAIError as exc:
            raise LLMFailure(_describe(exc)) from None
        except ValueError as exc:  # the client could not decode the HTTP body
            raise LLMFailure(f"malformed reply: {exc}"[:200]) from None
        return parse_json_object(text)


def _describe(exc: BaseException | None) -> str:
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    if isinstance(exc, openai.RateLimitError):
        return "429 rate limited"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}"
    if isinstance(exc, openai.APIConnectionError):
        return "connection error"
    return f"{type(exc).__name__}: {exc}"[:200]


def build_chat_client(api_key: str, base_url: str | None, timeout_s: float) -> "openai.OpenAI":
    import openai

    return openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=0)
