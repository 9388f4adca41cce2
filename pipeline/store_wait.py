"""A starting process waits for its broker and graph instead of failing on them.

A redis-server answers ``LOADING`` while it reads its data (seconds at 100k memories, tens of
seconds at a million), and a platform may start a process while its Redis restarts. The
embedded launcher starts its servers and its Python processes together, so that the
processes' imports (torch and the model's libraries: seconds of CPU) overlap the stores'
load; each process then waits here before its first store call. A store that answers
``LOADING`` is alive and is waited for as long as it loads. So is one whose port takes the
connection but whose answer does not come within the socket timeout: redis answers ``LOADING``
only between the units it loads, and FalkorDB reads a whole graph as one (tens of seconds at a
million memories). One that answers nothing for ``STORE_START_WAIT_S``, its port closed or
unreachable, is a real failure, reported with what to check.
"""

from __future__ import annotations

import logging
import socket
import time
from dataclasses import dataclass
from typing import Callable
from urllib.parse import quote

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from pipeline.config import Settings
from pipeline.errors import ConfigurationError

log = logging.getLogger("mempipe.start")

POLL_S = 0.1
SOCKET_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Store:
    name: str
    url: str


def graph_url(settings: Settings) -> str:
    """The graph server as a plain redis URL (FalkorDB's ``falkor[s]://`` schemes are redis')."""
    if settings.falkordb_url:
        scheme, rest = settings.falkordb_url.split("://", 1)
        return {"falkor": "redis", "falkors": "rediss"}.get(scheme, scheme) + "://" + rest
    auth = f":{quote(settings.falkordb_password, safe='')}@" if settings.falkordb_password else ""
    return f"redis://{auth}{settings.falkordb_host}:{settings.falkordb_port}"


def process_stores(settings: Settings) -> list[Store]:
    return [Store("broker", settings.redis_url), Store("graph", graph_url(settings))]


def wait_for_stores(settings: Settings, names: tuple[str, ...] = ("broker", "graph")) -> None:
    """Return once the named stores (the broker and the graph by default) answer; see the
    module's docstring."""
    for store in process_stores(settings):
        if store.name not in names:
            continue
        client = redis.Redis.from_url(store.url, socket_timeout=SOCKET_TIMEOUT_S,
                                      socket_connect_timeout=SOCKET_TIMEOUT_S, retry=Retry(NoBackoff(), 0))
        try:
            wait_for_store(store, client, settings.store_start_wait_s, listening=lambda: takes_connections(client))
        finally:
            client.close()


def wait_for_store(store: Store, client: redis.Redis, silence_s: float,
                   listening: Callable[[], bool] = lambda: False,
                   clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
    """``listening``: whether the store's port takes a connection, asked when an answer timed out."""
    started = last_answer = clock()
    said: set[str] = set()  # each kind of wait is logged once

    def say(kind: str, text: str) -> None:
        if kind not in said:
            said.add(kind)
            log.info("waiting for the %s (%s): %s", store.name, redacted(store.url), text)

    while True:
        try:
            client.ping()
        except redis.BusyLoadingError:
            last_answer = clock()
            say("loading", "it is loading its data")
        except redis.AuthenticationError as exc:  # a ConnectionError too, but waiting cannot fix it
            raise ConfigurationError(f"the {store.name} refused this process's credentials: {exc}") from exc
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            if isinstance(exc, redis.TimeoutError) and listening():
                last_answer = clock()
                say("busy", "it takes connections but has not answered yet (loading a large graph?)")
            elif clock() - last_answer > silence_s:
                raise ConfigurationError(
                    f"the {store.name} ({redacted(store.url)}) did not answer within {silence_s:g}s: {exc}. "
                    "Check that it runs and that its URL is right; raise STORE_START_WAIT_S if it starts slowly.") from exc
            else:
                say("silent", "it does not answer yet")
        else:
            if said:
                log.info("the %s answers (waited %.1fs)", store.name, clock() - started)
            return
        sleep(POLL_S)


def takes_connections(client: redis.Redis) -> bool:
    """Whether the client's TCP port accepts a connection: the server is up, if not answering.
    (A unix-socket URL cannot be told apart this way: False.)"""
    options = client.connection_pool.connection_kwargs
    if "host" not in options or "port" not in options:
        return False
    try:
        with socket.create_connection((options["host"], options["port"]), timeout=SOCKET_TIMEOUT_S):
            return True
    except OSError:
        return False


def redacted(url: str) -> str:
    """``url`` without its password, for messages."""
    scheme, _, rest = url.partition("://")
    if "@" not in rest:
        return url
    return f"{scheme}://***@{rest.rsplit('@', 1)[1]}"
