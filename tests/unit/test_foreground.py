"""Recall and /health in flight: the web's background vector work gives way to them (issue 21)."""

from __future__ import annotations

import asyncio
import os
import sys
import threading

from pipeline.foreground import Foreground


def test_an_idle_process_never_waits_and_a_turned_off_gate_never_does():
    gate = Foreground(max_wait_s=60)
    assert gate.give_way() is False
    off = Foreground(max_wait_s=0)
    off.enter()
    assert off.give_way() is False  # WEB_BACKGROUND_YIELD_MAX_MS=0: the old behaviour


def test_background_work_waits_while_a_request_is_in_flight_and_goes_on_when_it_ends():
    gate = Foreground(max_wait_s=60)
    gate.enter()
    waited = threading.Event()
    returned: list[bool] = []

    def background():
        returned.append(gate.give_way())
        waited.set()

    worker = threading.Thread(target=background)
    worker.start()
    assert not waited.wait(0.2), "background work went on while a recall was in flight"
    gate.leave()
    worker.join(10)
    assert returned == [True] and gate.waits == 1 and gate.in_flight == 0


def test_the_wait_is_bounded_so_a_stream_of_recalls_cannot_starve_the_import():
    gate = Foreground(max_wait_s=0.01)
    gate.enter()  # never leaves
    assert gate.give_way() is True  # it waited, and came back


def test_a_requests_own_store_calls_never_wait_for_it():
    gate = Foreground(max_wait_s=60)
    with gate.request():
        assert gate.in_flight == 1
        assert gate.give_way() is False  # the recall's own search: no deadlock on itself
        # ... nor in the thread pool it hands its work to (the context goes with it)
        assert asyncio.run(asyncio.to_thread(gate.give_way)) is False
    assert gate.in_flight == 0


def test_recall_and_health_are_marked_and_writes_are_not():
    from api.foreground import ForegroundRequests

    gate = Foreground(max_wait_s=60)
    seen: list[tuple[str, str, int]] = []

    async def inner(scope, receive, send):
        seen.append((scope["method"], scope["path"], gate.in_flight))

    app = ForegroundRequests(inner, gate)
    for method, path in (("GET", "/recall"), ("GET", "/health"), ("POST", "/memory/batch"), ("GET", "/memory/x")):
        asyncio.run(app({"type": "http", "method": method, "path": path}, None, None))
    assert seen == [("GET", "/recall", 1), ("GET", "/health", 1), ("POST", "/memory/batch", 0), ("GET", "/memory/x", 0)]
    assert gate.in_flight == 0


def test_an_edge_upsert_gives_way_before_each_chunk_and_stores_every_point(tmp_path):
    from pipeline.vectors import EdgeVectorStore, VectorPoint, VectorQuery
    from pipeline.vectors.edge import UPSERT_CHUNK

    calls: list[int] = []
    store = EdgeVectorStore(str(tmp_path / "shard"), 4, give_way=lambda: calls.append(1) or False)
    store.ensure_collection()
    try:
        count = 2 * UPSERT_CHUNK + 5
        points = [VectorPoint(f"m{i}", [1.0, float(i % 7), 0.5, 0.25], {"memory_id": f"m{i}", "content": "x"})
                  for i in range(count)]
        store.upsert(points)
        assert len(calls) == 3  # one step per chunk
        assert store.count() == count and store.pending_changes() == count  # nothing lost, nothing doubled
        store.search_many([VectorQuery([1.0, 0.0, 0.5, 0.25], 3, with_payload=False)])
        assert len(calls) == 4  # a SIMILAR_TO search batch gives way too
        assert store.persist() == count and len(calls) == 5  # and a flush of what was written
        assert store.persist() == 0 and len(calls) == 5  # nothing written: no flush, no wait
    finally:
        store.close()


def test_an_edge_payload_write_gives_way_before_each_step_and_writes_every_point(tmp_path):
    from pipeline.vectors import EdgeVectorStore, VectorPoint
    from pipeline.vectors.edge import PAYLOAD_CHUNK

    gate = Foreground(max_wait_s=5)
    steps: list[int] = []

    def give_way() -> bool:
        steps.append(gate.in_flight)
        return gate.give_way()

    store = EdgeVectorStore(str(tmp_path / "shard"), 4, give_way=give_way)
    store.ensure_collection()
    try:
        count = 2 * PAYLOAD_CHUNK + 3
        ids = [f"m{i}" for i in range(count)]
        store.upsert([VectorPoint(m, [1.0, float(i % 7), 0.5, 0.25], {"memory_id": m, "content": "x", "tags": ["a"]})
                      for i, m in enumerate(ids)])
        steps.clear()
        store.replace_payloads({m: {"memory_id": m, "content": "x", "tags": ["b"]} for m in ids})
        assert len(steps) == 3  # one step per PAYLOAD_CHUNK points
        store.set_payloads({m: {"importance": 0.9} for m in ids})  # merged into the packed document
        assert len(steps) == 6
        stored = store.retrieve(ids)
        assert all(stored[m].payload["tags"] == ["b"] and stored[m].payload["importance"] == 0.9 for m in ids)

        # A recall in flight holds the write back until it answers.
        gate.enter()
        writer = threading.Thread(target=store.set_payloads, args=({m: {"importance": 0.1} for m in ids},))
        writer.start()
        writer.join(timeout=0.5)
        assert steps[6:] == [1]  # its first step found the recall in flight, and waits
        assert writer.is_alive() and store.retrieve(ids[:1])[ids[0]].payload["importance"] == 0.9
        gate.leave()
        writer.join(timeout=5)
        assert not writer.is_alive()
        assert all(r.payload["importance"] == 0.1 for r in store.retrieve(ids).values())
    finally:
        store.close()


def test_the_web_hands_its_stores_the_gate_and_other_processes_never_wait():
    from pipeline.config import Settings
    from pipeline.vectors import build_vector_store

    gate = Foreground(max_wait_s=1)
    assert build_vector_store(Settings(), 8, give_way=gate.give_way)._give_way == gate.give_way
    assert build_vector_store(Settings(), 8)._give_way() is False
    assert Settings().web_background_yield_max_ms == 250


def test_the_launcher_starts_background_processes_niced(tmp_path):
    from ops.serve import Supervisor
    from pipeline.config import Settings

    supervisor = Supervisor(Settings(data_dir=tmp_path))
    out = tmp_path / "nice.txt"
    probe = [sys.executable, "-c", "import os, sys; open(sys.argv[1], 'w').write(str(os.nice(0)))", str(out)]
    supervisor._spawn("probe", probe, dict(os.environ), nice=7)
    supervisor.children[0][1].wait(30)
    assert int(out.read_text()) == os.nice(0) + 7
    assert Settings().embedded_background_nice == 10


def test_a_stored_batch_reaches_the_graph_in_short_writes_and_whole():
    from types import SimpleNamespace

    from pipeline.graph import GraphStore
    from pipeline.records import MemoryRecord

    written: list[list[str]] = []
    graph = SimpleNamespace(query=lambda cypher, params: written.append([r["id"] for r in params["rows"]])
                            or SimpleNamespace(result_set=[]))
    client = SimpleNamespace(select_graph=lambda name: graph)
    records = [MemoryRecord(id=f"m{i}", content="x", tags=[], importance=0.5, confidence=0.5, type="Context", type_source="default",
                            timestamp="2026-01-01T00:00:00+00:00", updated_at="2026-01-01T00:00:00+00:00") for i in range(250)]
    GraphStore(client, "g", write_rows=100).upsert_memories(records)
    assert [len(rows) for rows in written] == [100, 100, 50]  # recall's reads get in between
    assert [m for rows in written for m in rows] == [r.id for r in records]  # each once, in order
    written.clear()
    GraphStore(client, "g").upsert_memories(records)  # GRAPH_WRITE_ROWS=0: one query, as before
    assert [len(rows) for rows in written] == [250]
    from pipeline.config import Settings
    assert Settings().graph_write_rows == 100


def test_batch_acceptance_on_the_event_loop_waits_for_a_recall_without_blocking_it():
    gate = Foreground(max_wait_s=60)

    async def scenario():
        gate.enter()  # a recall in flight
        accepting = asyncio.create_task(gate.give_way_async())
        await asyncio.sleep(0.05)
        assert not accepting.done()  # the batch waits ...
        gate.leave()  # ... and the loop it did not block let the recall finish
        return await asyncio.wait_for(accepting, 10)

    assert asyncio.run(scenario()) is True
    assert asyncio.run(Foreground(max_wait_s=60).give_way_async()) is False  # nothing in flight
