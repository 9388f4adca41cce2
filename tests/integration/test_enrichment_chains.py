"""PRECEDED_BY chains written by the real SequenceLinker: real FalkorDB, real broker Redis.

The stage-level tests read chains through ``/memories/{id}/related``, which shows one row
per neighbour and so cannot see a doubled edge. These count the edges themselves.
"""

from __future__ import annotations

import random
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

import pytest
import redis
from falkordb import FalkorDB

from pipeline.enrichment.sequence import Placed, SequenceLinker
from pipeline.graph import GraphStore
from pipeline.config import Settings
from pipeline.records import Limits, build_new_record
from ops.bench.stack import _stack_counter

LIMITS = Limits.from_settings(Settings(), vector_size=384)

pytestmark = pytest.mark.integration


@pytest.fixture()
def chain_stores(servers):
    graph = GraphStore(FalkorDB(host="127.0.0.1", port=servers.graph.port), f"chains_{uuid.uuid4().hex[:8]}")
    broker = redis.Redis(port=servers.broker.port, db=next(_stack_counter))
    yield graph, broker
    graph.run_write("MATCH (n) DETACH DELETE n")


def _memories(graph: GraphStore, scopes: list[str], count: int) -> list[tuple[str, float]]:
    """``count`` memories in every scope, one minute apart; (id, epoch) in time order."""
    base = datetime(2024, 3, 1, tzinfo=timezone.utc).timestamp()
    records = [build_new_record({"content": f"turn {i}", "tags": scopes,
                                 "timestamp": datetime.fromtimestamp(base + 60 * i, timezone.utc).isoformat()}, LIMITS)
               for i in range(count)]
    graph.upsert_memories(records)
    return [(r.id, base + 60 * i) for i, r in enumerate(records)]


def _chain_links(graph: GraphStore, scope: str) -> list[tuple[str, str]]:
    rows = graph.run_read("MATCH (a:Memory)-[r:PRECEDED_BY {scope: $s}]->(b:Memory) RETURN a.id, b.id", {"s": scope})
    return sorted((a, b) for a, b in rows)


def _expected(memories: list[tuple[str, float]]) -> list[tuple[str, str]]:
    ids = [m for m, _ in memories]
    return sorted(zip(ids[1:], ids[:-1]))


def test_one_batch_of_neighbours_writes_each_link_once(chain_stores):
    graph, broker = chain_stores
    scopes = [f"conversation:{uuid.uuid4().hex[:8]}", f"session:{uuid.uuid4().hex[:8]}"]
    for count in (3, 64):  # a short run and a full message of neighbours, each as one batch
        memories = _memories(graph, scopes, count)
        linker = SequenceLinker(broker, graph)
        linker.link([Placed(m, s, epoch) for m, epoch in memories for s in scopes], "2024-03-01T00:00:00+00:00", 1.0)
        for scope in scopes:
            assert _chain_links(graph, scope) == _expected(memories), (count, scope)
        graph.run_write("MATCH (n) DETACH DELETE n")
        broker.flushdb()


def test_shuffled_batches_on_two_threads_leave_one_exact_chain(chain_stores):
    graph, broker = chain_stores
    scopes = [f"conversation:{uuid.uuid4().hex[:8]}", f"session:{uuid.uuid4().hex[:8]}"]
    memories = _memories(graph, scopes, 60)
    shuffled = memories[:]
    random.Random(11).shuffle(shuffled)
    sizes = [1, 4, 3, 8, 2, 16, 5, 4, 17]
    batches, start = [], 0
    for size in sizes:
        batches.append(shuffled[start:start + size])
        start += size
    assert start == len(shuffled)
    linker = SequenceLinker(broker, graph)

    def link(batch):
        linker.link([Placed(m, s, epoch) for m, epoch in batch for s in scopes],
                    datetime.now(timezone.utc).isoformat(), 1.0)

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(link, batches))
    for scope in scopes:
        assert _chain_links(graph, scope) == _expected(memories), scope
    # Linking everything again (a redelivered message) changes nothing.
    link(memories)
    for scope in scopes:
        assert _chain_links(graph, scope) == _expected(memories), scope
