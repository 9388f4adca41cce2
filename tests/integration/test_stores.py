"""Store contracts: both vector backends behave the same; the graph's schema is in place."""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from types import SimpleNamespace

import pytest
from falkordb import FalkorDB

from pipeline.config import Settings
from pipeline.errors import VectorSizeMismatch
from pipeline.graph import GraphStore, Scope, TagFilter
from pipeline.records import Limits, build_new_record, point_id_for
from pipeline.vectors import EdgeVectorStore, QdrantServerVectorStore, VectorPoint, VectorQuery, vector_payload
from pipeline.vectors.edge import CHANGES_FILE
from tests import edge_segments

LIMITS = Limits.from_settings(Settings(), vector_size=384)

pytestmark = pytest.mark.integration
SIZE = 8


def unit(i: int) -> list[float]:
    vector = [0.0] * SIZE
    vector[i % SIZE] = 1.0
    return vector


@pytest.fixture(params=["edge", "server"])
def vectors(request, tmp_path):
    if request.param == "edge":
        store = EdgeVectorStore(str(tmp_path / "shard"), SIZE)
    else:
        store = QdrantServerVectorStore.connect(Settings(qdrant_url=":memory:"), SIZE)
    store.ensure_collection()
    store.ensure_collection()  # idempotent
    yield store
    store.close()


def point(memory_id: str, i: int, tags: list[str], type_: str = "Context") -> VectorPoint:
    memory = {"id": memory_id, "content": f"m{i}", "tags": tags, "type": type_, "importance": 0.5,
              "timestamp": "2025-01-01T00:00:00+00:00", "metadata": {"k": i}}
    return VectorPoint(memory_id, unit(i), vector_payload(memory))


def ids(hits) -> list[str]:
    return [h.memory_id for h in hits]


def test_vector_store_contract(vectors):
    vectors.upsert([
        point("a", 0, ["slack:channel:General"]),
        point("b", 1, ["slack:user:U1", "other"]),
        point("c", 2, ["misc"], type_="MetaPattern"),
        point("non-uuid:id/1", 3, ["misc"]),
    ])
    vectors.upsert([point("a", 0, ["slack:channel:General"])])  # idempotent upsert
    assert vectors.count() == 4

    everything = VectorQuery(unit(0), 10)
    assert ids(vectors.search(everything))[0] == "a"
    prefix = VectorQuery(unit(0), 10, Scope(TagFilter(("slack",))))
    assert set(ids(vectors.search(prefix))) == {"a", "b"}
    exact = VectorQuery(unit(0), 10, Scope(TagFilter(("slack:channel:general",), match="exact")))
    assert ids(vectors.search(exact)) == ["a"]
    every = VectorQuery(unit(0), 10, Scope(TagFilter(("slack", "other"), mode="all")))
    assert ids(vectors.search(every)) == ["b"]
    without_meta = VectorQuery(unit(2), 10, Scope(excluded_types=frozenset({"MetaPattern"})))
    assert "c" not in ids(vectors.search(without_meta))

    hit = vectors.search(VectorQuery(unit(3), 1))[0]
    assert hit.memory_id == "non-uuid:id/1" and hit.payload["metadata"] == {"k": 3}
    assert hit.score == pytest.approx(1.0, abs=1e-5)

    vectors.set_payload("a", {"importance": 0.9})
    assert vectors.search(VectorQuery(unit(0), 1))[0].payload["importance"] == 0.9
    # A partial update of a nested value replaces that value only (Edge stores it packed).
    vectors.set_payloads({"a": {"metadata": {"k": 10}}})
    full = vectors.search(VectorQuery(unit(0), 1))[0].payload
    assert full["metadata"] == {"k": 10} and full["tags"] == ["slack:channel:General"] and full["importance"] == 0.9
    assert vectors.retrieve(["a"])["a"].payload == full
    assert any(r.payload == full for r in vectors.scroll(None, 10)[0])
    chosen = vectors.scroll(None, 10, with_vectors=True, payload_fields=["memory_id", "type", "lifecycle"])[0]
    assert {r.memory_id: r.payload.get("type") for r in chosen}["c"] == "MetaPattern"
    assert all(set(r.payload) <= {"memory_id", "type", "lifecycle"} and len(r.vector) == len(unit(0)) for r in chosen)
    picked = vectors.retrieve(["a", "c"], with_vectors=True, payload_fields=["memory_id", "type"])
    assert set(picked) == {"a", "c"} and picked["c"].payload.get("type") == "MetaPattern"
    assert all(set(r.payload) <= {"memory_id", "type"} and len(r.vector) == len(unit(0)) for r in picked.values())
    # Ids only: hits still name their memory and score.
    bare = vectors.search(VectorQuery(unit(0), 2, with_payload=False))
    assert bare[0].memory_id == "a" and bare[0].score == pytest.approx(1.0, abs=1e-5)
    assert set(bare[0].payload) <= {"memory_id"}
    vectors.delete(["a", "non-uuid:id/1"])
    assert vectors.count() == 2
    assert "a" not in ids(vectors.search(everything))


def test_search_many_answers_each_query_as_search_does(vectors):
    vectors.upsert([point(f"m{i}", i, ["slack"] if i % 2 else ["misc"]) for i in range(6)])
    queries = [
        VectorQuery(unit(1), 3, with_payload=False),
        VectorQuery(unit(4), 2),
        VectorQuery(unit(0), 5, Scope(TagFilter(("slack",)))),
    ]
    batched = vectors.search_many(queries)
    assert len(batched) == 3
    for query, hits in zip(queries, batched):
        one = vectors.search(query)
        assert ids(hits) == ids(one)
        assert [h.score for h in hits] == pytest.approx([h.score for h in one])
        assert [h.payload for h in hits] == [h.payload for h in one]
    assert ids(batched[0])[0] == "m1" and set(ids(batched[2])) == {"m1", "m3", "m5"}
    assert vectors.search_many([]) == []


def test_search_many_never_answers_archived_or_excluded_types(vectors):
    """Run optimistically without the exclusions, a query with an excluded hit runs again."""
    vectors.upsert([point(f"m{i}", i, ["misc"]) for i in range(4)] + [point("meta", 5, ["misc"], type_="MetaPattern")])
    vectors.set_payload("m1", {"archived": True, "lifecycle": "archived"})
    queries = [VectorQuery(unit(1), 3, with_payload=False),  # nearest is archived
               VectorQuery(unit(5), 2, Scope(excluded_types=frozenset({"MetaPattern"}))),  # nearest is excluded
               VectorQuery(unit(2), 1, with_payload=False)]  # nothing excluded near it
    archived, excluded, plain = vectors.search_many(queries)
    assert "m1" not in ids(archived) and len(archived) == 3
    assert "meta" not in ids(excluded) and len(excluded) == 2
    assert ids(plain) == ["m2"] and set(plain[0].payload) == {"memory_id"}
    for query, hits in zip(queries, (archived, excluded, plain)):
        assert ids(hits) == ids(vectors.search(query))


TAGGED = {
    "t0": ["slack", "slack:channel:General", "slack:user:U1"],
    "t1": ["slack:channel:random", "entity:people:ann"],
    "t2": ["Slack:Thread:1.2", "temp"],
    "t3": ["temp:draft", "misc"],
    "t4": ["misc"],
    "t5": [],
}
TAG_SCOPES = [
    Scope(TagFilter(("slack",))), Scope(TagFilter(("slack:channel",))), Scope(TagFilter(("slack:channel:general",))),
    Scope(TagFilter(("SLACK:CHANNEL:GENERAL",), match="exact")), Scope(TagFilter(("slack:channel",), match="exact")),
    Scope(TagFilter(("slack", "slack:user"), mode="all")), Scope(TagFilter(("slack:channel", "entity"), mode="all")),
    Scope(TagFilter(("temp", "misc"), mode="all", match="exact")), Scope(TagFilter(("temp", "misc"))),
    Scope(TagFilter(("entity:people", "temp"))), Scope(exclude_tags=("temp",)), Scope(exclude_tags=("slack:channel",)),
    Scope(exclude_tags=("misc", "slack:user:u1")), Scope(TagFilter(("slack",)), exclude_tags=("slack:thread",)),
]


def _expected(scope: Scope) -> set[str]:
    """The spec's tag semantics, computed apart: prefix = a colon-prefix of a tag (the tag
    itself included), exact = a whole tag, case-insensitive; excluded as a prefix."""
    def prefixes(tags):
        return {":".join(t.lower().split(":")[:n]) for t in tags for n in range(1, t.count(":") + 2)}
    found = set()
    for memory_id, tags in TAGGED.items():
        have = prefixes(tags) if scope.tags.match == "prefix" else {t.lower() for t in tags}
        wanted = scope.tags.lowered
        if wanted and not (all if scope.tags.mode == "all" else any)(t in have for t in wanted):
            continue
        if any(x in prefixes(tags) for x in scope.excluded_lowered):
            continue
        found.add(memory_id)
    return found


def test_tag_filters_match_the_spec_on_both_backends(vectors):
    """Edge keeps natively only the prefixes that are not whole tags (tags_lower has those):
    every tag scope still selects exactly what the spec says, on either backend."""
    vectors.upsert([point(memory_id, i, tags) for i, (memory_id, tags) in enumerate(TAGGED.items())])
    for scope in TAG_SCOPES:
        assert set(ids(vectors.search(VectorQuery(unit(0), 20, scope)))) == _expected(scope), scope
        assert set(ids(vectors.search_many([VectorQuery(unit(0), 20, scope)])[0])) == _expected(scope), scope
    payload = vectors.retrieve(["t0"])["t0"].payload  # read back whole, as written
    assert payload["tag_prefixes"] == ["slack", "slack:channel", "slack:channel:general", "slack:user", "slack:user:u1"]
    # A tag change through a partial update: filters follow it.
    retagged = vector_payload({"id": "t4", "content": "m4", "tags": ["slack:channel:ops"], "type": "Context"})
    vectors.set_payloads({"t4": {k: retagged[k] for k in ("tags", "tags_lower", "tag_prefixes")}})
    assert "t4" in ids(vectors.search(VectorQuery(unit(0), 20, Scope(TagFilter(("slack:channel",))))))
    assert "t4" not in ids(vectors.search(VectorQuery(unit(0), 20, Scope(TagFilter(("misc",))))))
    assert vectors.retrieve(["t4"])["t4"].payload["metadata"] == {"k": 4}  # the rest of the document kept


def test_edge_native_tag_prefixes_are_trimmed_and_legacy_points_still_match(tmp_path):
    store = EdgeVectorStore(str(tmp_path / "shard"), SIZE)
    store.ensure_collection()
    qe = store._qe
    store.upsert([point("new", 0, ["slack:channel:general", "slack"])])
    raw = store._shard.retrieve([point_id_for("new")], with_payload=True, with_vector=False)[0].payload
    assert raw["tag_prefixes"] == ["slack:channel"]  # "slack" and the whole channel tag are in tags_lower
    # a point written before the trimmed layout: all prefixes native
    legacy = point("old", 1, ["slack:channel:general"]).payload
    store._shard.update(qe.UpdateOperation.upsert_points([qe.Point(point_id_for("old"), unit(1), legacy)]))
    for scope in (Scope(TagFilter(("slack",))), Scope(TagFilter(("slack:channel:general",))),
                  Scope(TagFilter(("slack", "slack:channel"), mode="all"))):
        assert set(ids(store.search(VectorQuery(unit(0), 10, scope)))) == {"new", "old"}
    assert ids(store.search(VectorQuery(unit(0), 10, Scope(exclude_tags=("slack",))))) == []
    store.close()


def test_edge_reads_points_written_before_packed_payloads(tmp_path):
    store = EdgeVectorStore(str(tmp_path / "shard"), SIZE)
    store.ensure_collection()
    qe = store._qe
    legacy = point("old", 0, ["misc"]).payload  # nested values native, as before the packed layout
    store._shard.update(qe.UpdateOperation.upsert_points([qe.Point(str(uuid.uuid4()), unit(0), legacy)]))
    assert store.search(VectorQuery(unit(0), 1))[0].payload == legacy
    store.close()


def test_edge_payload_indexes_and_size_mismatch(tmp_path):
    path = str(tmp_path / "shard")
    store = EdgeVectorStore(path, SIZE)
    store.ensure_collection()
    schema = store._shard.info().payload_schema
    assert {"tag_prefixes", "tags_lower", "type", "memory_id", "timestamp_epoch", "importance"} <= set(schema)
    store.close()
    with pytest.raises(VectorSizeMismatch, match="produces 16"):
        EdgeVectorStore(path, 16).ensure_collection()


def test_server_backend_size_mismatch():
    settings = Settings(qdrant_url=":memory:")
    store = QdrantServerVectorStore.connect(settings, SIZE)
    store.ensure_collection()
    mismatched = QdrantServerVectorStore(store._client, settings.qdrant_collection, 16)
    with pytest.raises(VectorSizeMismatch):
        mismatched.ensure_collection()


def test_graph_schema_and_parameterised_writes(servers):
    graph_name = f"schema_{uuid.uuid4().hex[:6]}"
    store = GraphStore(FalkorDB(host="127.0.0.1", port=servers.graph.port), graph_name)
    store.ensure_schema()
    store.ensure_schema()  # idempotent
    indexes = FalkorDB(host="127.0.0.1", port=servers.graph.port).select_graph(graph_name).query("CALL db.indexes()").result_set
    fields = {field: kinds for row in indexes for field, kinds in row[2].items()}
    assert "RANGE" in fields["id"] and "RANGE" in fields["timestamp_epoch"] and "FULLTEXT" in fields["content"]

    hostile = "x'}) DETACH DELETE m //` \u2603 \\ {{$id}}"
    record = build_new_record({"content": hostile, "tags": [hostile], "metadata": {hostile: hostile}, "id": "safe-1"}, LIMITS)
    other = build_new_record({"content": "bystander", "id": "safe-2"}, LIMITS)
    store.upsert_memories([record, other])
    stored = store.get_memory("safe-1")
    assert stored["content"] == hostile and stored["tags"] == [hostile] and stored["metadata"] == {hostile: hostile}
    assert store.get_memory("safe-2")["content"] == "bystander"
    assert store.count_memories() == 2
    found = store.keyword_search(["bystander"], Scope(), 5)
    assert [m["id"] for m, _ in found] == ["safe-2"]


def fulltext_fields(port: int, graph_name: str) -> set[str]:
    rows = FalkorDB(host="127.0.0.1", port=port).select_graph(graph_name).query("CALL db.indexes()").result_set
    return {field for row in rows for field, kinds in row[2].items() if "FULLTEXT" in kinds}


def test_graph_content_fulltext_is_added_and_dropped_on_request(servers):
    """The content field comes and goes on request, each way idempotent. Without it metadata
    search still answers, and content search (what a recall whose vector store failed falls
    back to) scans: memories in scope ranked by how many of the terms their content holds."""
    graph_name = f"fulltext_{uuid.uuid4().hex[:6]}"
    store = GraphStore(FalkorDB(host="127.0.0.1", port=servers.graph.port), graph_name)
    store.ensure_schema(content_fulltext=False)
    store.upsert_memories([
        build_new_record({"content": "Pistachios are green", "metadata": {"project": "orchard"}, "id": "p1",
                          "tags": ["nuts"]}, LIMITS),
        build_new_record({"content": "green olives and pistachios in the orchard", "id": "p2", "tags": ["nuts"]}, LIMITS),
        build_new_record({"content": "pistachios again", "id": "p3", "tags": ["other"]}, LIMITS),
        build_new_record({"content": "nothing to see", "id": "p4", "tags": ["nuts"]}, LIMITS),
    ])
    assert fulltext_fields(servers.graph.port, graph_name) == {"metadata_text"} and not store.content_indexed
    scanned = store.keyword_search(["pistachios", "green"], Scope(tags=TagFilter(("nuts",), "any", "exact")), 5)
    assert sorted((m["id"], score) for m, score in scanned) == [("p1", 2.0), ("p2", 2.0)]
    assert [memory_id for memory_id, _, _ in store.keyword_matches(["olives"], Scope(), 5)] == ["p2"]
    assert [m["id"] for m, _ in store.keyword_search(["orchard"], Scope(), 5, field="metadata_text")] == ["p1"]

    store.set_content_fulltext(True)
    store.set_content_fulltext(True)
    store.ensure_schema(content_fulltext=True)
    assert fulltext_fields(servers.graph.port, graph_name) == {"metadata_text", "content"} and store.content_indexed
    deadline = time.monotonic() + 10  # FalkorDB indexes the existing nodes of a new field in the background
    while not store.keyword_search(["olives"], Scope(), 5) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [m["id"] for m, _ in store.keyword_search(["olives"], Scope(), 5)] == ["p2"]

    store.set_content_fulltext(False)
    store.set_content_fulltext(False)
    store.ensure_schema(content_fulltext=False)  # does not add it back
    assert fulltext_fields(servers.graph.port, graph_name) == {"metadata_text"} and not store.content_indexed
    assert [m["id"] for m, _ in store.keyword_search(["olives"], Scope(), 5)] == ["p2"]  # the scan again
    assert [m["id"] for m, _ in store.keyword_search(["orchard"], Scope(), 5, field="metadata_text")] == ["p1"]
    # another process's view, read from the graph: the field is gone
    assert not GraphStore(FalkorDB(host="127.0.0.1", port=servers.graph.port), graph_name).content_indexed


def test_the_edge_owner_keeps_the_graph_content_index_only_while_keyword_search_needs_it(make_stack, tmp_path):
    """The process that opens the live Edge shard drops the graph's content field when the
    shard's own text index answers keyword search, and keeps or adds it when the shard was
    written before that index (no marker) or RECALL_KEYWORD_SOURCE=graph says so; a process
    that has not opened the shard changes nothing."""
    from pipeline.services import Services
    from pipeline.vectors import edge_text

    stack = make_stack()  # a broker database of its own; nothing of the stack is started
    graph_name = f"owner_{uuid.uuid4().hex[:6]}"
    base = {"redis_url": stack.redis_url, "falkordb_port": stack.graph_port, "falkordb_graph": graph_name,
            "MEMPIPE_DATA_DIR": tmp_path, "embedding_provider": "hash"}
    GraphStore(FalkorDB(host="127.0.0.1", port=stack.graph_port), graph_name).ensure_schema()  # as an older version left it

    def open_live(**settings) -> Settings:
        configured = Settings(**base, **settings)
        services = Services(configured)
        services.vectors.count()
        services.settle_content_fulltext()  # as the web does once the graph answers
        services.close_vector_stores()
        return configured

    Services(Settings(**base)).settle_content_fulltext()  # no shard opened here: not its call
    assert fulltext_fields(stack.graph_port, graph_name) == {"metadata_text", "content"}
    settings = open_live()
    assert fulltext_fields(stack.graph_port, graph_name) == {"metadata_text"}
    open_live(recall_keyword_source="graph")
    assert fulltext_fields(stack.graph_port, graph_name) == {"metadata_text", "content"}
    open_live()
    assert fulltext_fields(stack.graph_port, graph_name) == {"metadata_text"}
    (settings.edge_path / edge_text.MARKER).unlink()  # a shard from before the text index, not yet repacked
    open_live()
    assert fulltext_fields(stack.graph_port, graph_name) == {"metadata_text", "content"}


def test_the_web_drops_an_older_stores_content_index_once_the_graph_answers(make_stack):
    stack = make_stack()
    graph_name = stack.env()["FALKORDB_GRAPH"]
    GraphStore(FalkorDB(host="127.0.0.1", port=stack.graph_port), graph_name).ensure_schema()  # as an older version left it
    assert "content" in fulltext_fields(stack.graph_port, graph_name)
    stack.start_web()
    assert fulltext_fields(stack.graph_port, graph_name) == {"metadata_text"}


def test_chained_pairs_reads_both_distances_in_one_query(servers):
    """Pool members one and two PRECEDED_BY steps apart, in any scope; others and outsiders not."""
    from pipeline.query.neighbours import chained_pairs

    store = GraphStore(FalkorDB(host="127.0.0.1", port=servers.graph.port), f"chain_{uuid.uuid4().hex[:6]}")
    store.ensure_schema()
    store.upsert_memories([build_new_record({"content": f"turn {i}", "id": f"t{i}"}, LIMITS) for i in range(6)])
    links = [("t1", "t0", "conversation:a"), ("t2", "t1", "conversation:a"), ("t3", "t2", "conversation:a"),
             ("t5", "t4", "conversation:b"), ("t4", "t0", "conversation:b")]
    store._query("UNWIND $rows AS r MATCH (a:Memory {id: r[0]}), (b:Memory {id: r[1]}) "
                 "CREATE (a)-[:PRECEDED_BY {scope: r[2]}]->(b)", {"rows": [list(link) for link in links]})
    pool = ["t0", "t1", "t3", "t5"]  # t2 and t4 are not in the pool
    both = chained_pairs(store, pool, steps=2)
    assert sorted(both.adjacent) == [("t1", "t0")]
    assert sorted(both.two_apart) == [("t3", "t1"), ("t5", "t0")]
    near_only = chained_pairs(store, pool, steps=1)
    assert sorted(near_only.adjacent) == [("t1", "t0")] and near_only.two_apart == []
    assert chained_pairs(store, ["t0"], steps=2).adjacent == []


def test_chained_pairs_pairs_a_batch_before_enrichment_chains_it(servers):
    """With scope prefixes the one read also pairs members by their batch arrival."""
    from pipeline.query.neighbours import chained_pairs

    store = GraphStore(FalkorDB(host="127.0.0.1", port=servers.graph.port), f"chain_{uuid.uuid4().hex[:6]}")
    store.ensure_schema()
    records = [build_new_record({"content": f"turn {i}", "id": f"u{i}", "tags": ["conversation:a"]}, LIMITS)
               for i in range(5)]
    for index, record in enumerate(records):
        record.arrival = 1_000 + index  # one batch: one clock reading plus the item's index
    store.upsert_memories(records)
    store._query("MATCH (a:Memory {id: 'u1'}), (b:Memory {id: 'u0'}) CREATE (a)-[:PRECEDED_BY {scope: 'conversation:a'}]->(b)", {})
    pool = ["u0", "u1", "u2", "u3", "u4"]
    members = {r.id: (0.0, ["conversation:a"]) for r in records}
    pairs = chained_pairs(store, pool, steps=2, scope_prefixes=("conversation",), members=members)
    # u1-u0 is chained (and a batch pair too: counted once); the rest are batch pairs only
    assert sorted(pairs.adjacent) == [("u1", "u0"), ("u2", "u1"), ("u3", "u2"), ("u4", "u3")]
    assert sorted(pairs.two_apart) == [("u2", "u0"), ("u3", "u1"), ("u4", "u2")]
    assert chained_pairs(store, pool, steps=2).adjacent == [("u1", "u0")]  # without prefixes: edges only


class _CountingShard:
    """The real Edge shard, with each optimize() call recorded with the thread that made it."""

    def __init__(self, shard):
        self._shard = shard
        self.optimize_threads: list[str] = []

    def optimize(self):
        self.optimize_threads.append(threading.current_thread().name)
        return self._shard.optimize()

    def __getattr__(self, name):
        return getattr(self._shard, name)


def test_edge_index_build_waits_for_changes_and_a_pause_and_runs_on_the_maintenance_thread(tmp_path, caplog):
    from api.index_maintainer import IndexMaintainer
    from pipeline.vectors import INDEX_BUILD_FINISHED, INDEX_BUILD_STARTED

    caplog.set_level(logging.INFO, logger="pipeline.vectors.edge")

    store = EdgeVectorStore(str(tmp_path / "shard"), SIZE, optimize_min_changes=5, optimize_quiet_s=0.3)
    store.ensure_collection()
    shard = store._shard = _CountingShard(store._shard)
    store.upsert([point(f"p{i}", i, ["idx"]) for i in range(3)])
    store.maintain()
    assert shard.optimize_threads == []  # too few changes to be worth a rebuild
    store.upsert([point(f"p{i}", i, ["idx"]) for i in range(3, 6)])
    store.maintain()
    assert shard.optimize_threads == []  # writes have not paused yet

    maintainer = IndexMaintainer(SimpleNamespace(vectors=store), interval=0.05)  # no holds: nothing else to consult
    maintainer.start()
    try:
        deadline = time.monotonic() + 10
        while not shard.optimize_threads and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        maintainer.stop()
        maintainer.join(5)
    assert shard.optimize_threads == ["vector-maintenance"]  # once, off the request path
    # Logged around the build (it holds vector writes): what changed and how long it took.
    builds = [(r.getMessage(), getattr(r, "changes", None)) for r in caplog.records if r.name == "pipeline.vectors.edge"]
    assert builds == [(INDEX_BUILD_STARTED, 6), (INDEX_BUILD_FINISHED, 6)]
    finished = next(r for r in caplog.records if r.getMessage() == INDEX_BUILD_FINISHED)
    assert isinstance(finished.seconds, float) and finished.seconds >= 0
    assert ids(store.search(VectorQuery(unit(4), 1))) == ["p4"] and store.count() == 6
    store.maintain()
    assert shard.optimize_threads == ["vector-maintenance"]  # nothing changed since
    store.close()


def test_edge_payload_updates_count_toward_the_next_index_build(tmp_path):
    """Qdrant moves an indexed point out of its HNSW segment on any update, a new payload's too
    (enrichment's tags, decay's importance): searches then scan it until a build. So payload
    updates count like writes, and they do not hold a build back as a bulk import's writes do."""
    quiet_s = 0.3
    store = EdgeVectorStore(str(tmp_path / "shard"), SIZE, optimize_min_changes=3, optimize_quiet_s=quiet_s)
    store.ensure_collection()
    store.upsert([point(f"p{i}", i, ["idx"]) for i in range(6)])
    time.sleep(quiet_s * 2)
    store.maintain()
    assert store.pending_changes() == 0
    store.set_payloads({f"p{i}": {"importance": 0.9} for i in range(3)})
    assert store.pending_changes() == 3 and store.build_due()
    store.maintain()
    assert store.pending_changes() == 0
    assert {r.payload["importance"] for r in store.retrieve(["p0", "p1", "p2"]).values()} == {0.9}
    store.close()


def test_edge_changes_owed_a_build_are_remembered_across_a_restart(tmp_path):
    """Qdrant's own counts take a re-payloaded point for indexed: the count of changes since
    the last build is kept beside the shard (at each flush, each build and at close)."""
    path = str(tmp_path / "shard")
    store = EdgeVectorStore(path, SIZE, optimize_min_changes=3, optimize_min_share=0)
    store.ensure_collection()
    store.upsert([point(f"p{i}", i, ["idx"]) for i in range(6)])
    store.persist()
    assert json.loads((tmp_path / "shard" / CHANGES_FILE).read_text()) == {"changes": 6, "codes_only": False}
    store.maintain()  # the build: recorded at once, so a kill before the next flush owes none
    assert json.loads((tmp_path / "shard" / CHANGES_FILE).read_text()) == {"changes": 0, "codes_only": False}
    store.set_payloads({"p0": {"importance": 0.9}, "p1": {"importance": 0.9}})
    store.persist()
    assert json.loads((tmp_path / "shard" / CHANGES_FILE).read_text()) == {"changes": 2, "codes_only": False}
    store.close()
    reopened = EdgeVectorStore(path, SIZE, optimize_min_changes=3, optimize_min_share=0)
    reopened.ensure_collection()
    assert reopened.pending_changes() == 2 and not reopened.build_due()
    reopened.set_payloads({"p2": {"importance": 0.9}})
    assert reopened.build_due()
    reopened.close()


def test_an_edge_index_build_waits_for_a_share_of_the_shard_to_have_changed(tmp_path):
    """At a million points a build copies the shard and its swap pauses every shard call:
    a few changed points are not worth one (EDGE_OPTIMIZE_MIN_SHARE)."""
    store = EdgeVectorStore(str(tmp_path / "shard"), SIZE, optimize_min_changes=1, optimize_min_share=0.5)
    store.ensure_collection()
    store.upsert([point(f"p{i}", i, ["idx"]) for i in range(10)])
    assert store.build_due()
    store.maintain()
    assert store.pending_changes() == 0
    store.set_payloads({f"p{i}": {"importance": 0.9} for i in range(4)})
    assert not store.build_due()  # 4 of 10 changed: under half
    store.maintain()
    assert store.pending_changes() == 4
    store.upsert([point("p9", 9, ["idx"])])
    assert store.build_due()
    store.close()


def _segment_payload_storage(path: str) -> set[str]:
    return {config["payload_storage_type"]["type"] for _, config in edge_segments.segments(path)}


def test_edge_payloads_in_ram_and_a_cold_shard_converted_at_its_next_index_build(tmp_path):
    """Recall reads every hit's payload, so payloads live in RAM (EDGE_PAYLOAD_MEMORY=pinned);
    a shard written with on-disk payloads asks for one index build, which converts it."""
    path = str(tmp_path / "shard")
    cold = EdgeVectorStore(path, SIZE, payload_memory="cold")
    cold.ensure_collection()
    cold.upsert([point(f"p{i}", i, ["idx"]) for i in range(4)])
    cold.close()
    assert _segment_payload_storage(path) == {"mmap"}

    # below its plain size too: the conversion is the one build a plain shard gets
    store = EdgeVectorStore(path, SIZE, optimize_min_changes=500, plain_max_points=1000)
    store.ensure_collection()
    shard = store._shard = _CountingShard(store._shard)
    store.maintain()  # no writes since opening: only the conversion asks for the build
    assert len(shard.optimize_threads) == 1
    assert _segment_payload_storage(path) == {"in_ram_mmap"}
    assert ids(store.search(VectorQuery(unit(2), 1))) == ["p2"] and store.count() == 4
    store.close()

    reopened = EdgeVectorStore(path, SIZE, optimize_min_changes=500)
    reopened.ensure_collection()
    shard = reopened._shard = _CountingShard(reopened._shard)
    reopened.maintain()
    assert shard.optimize_threads == []  # already converted: nothing to rebuild
    reopened.close()


def _quantized_segments(path: str) -> int:
    return sum(edge_segments.has_codes(directory) for directory, _ in edge_segments.segments(path))


def test_an_index_build_keeps_int8_codes_and_searches_rescore_on_float32(tmp_path):
    """EDGE_VECTOR_CODES=int8: the build keeps codes beside the vectors; a search walks the codes
    and rescores on float32, so each hit's score is its exact cosine. A build below Edge's own
    indexing threshold (~6,600 points of 384 dimensions) indexes nothing: 7,000 points."""
    import numpy as np

    rng = np.random.default_rng(7)
    centres = rng.normal(size=(50, 384))
    rows = centres[rng.integers(0, 50, 7000)] + 0.7 * rng.normal(size=(7000, 384))
    rows = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    queries = centres[:20] / np.linalg.norm(centres[:20], axis=1, keepdims=True)
    exact = [set(np.argsort(-(rows @ q))[:10].tolist()) for q in queries]
    found = {}
    for codes in ("int8", "none"):
        path = str(tmp_path / codes)
        store = EdgeVectorStore(path, 384, optimize_min_changes=1, vector_codes=codes)
        store.ensure_collection()
        store.upsert([VectorPoint(f"m{i}", row.tolist(), vector_payload({"id": f"m{i}", "content": "c", "tags": ["t"]}))
                      for i, row in enumerate(rows)])
        store.maintain()  # builds in this process (no child configured, plain size 0)
        store.finish_build()
        assert _quantized_segments(path) == (1 if codes == "int8" else 0)
        found[codes] = []
        for query, truth in zip(queries, exact):
            hits = store.search(VectorQuery(query.tolist(), 10))
            for hit in hits:
                assert hit.score == pytest.approx(float(rows[int(hit.memory_id[1:])] @ query), abs=1e-5)
            found[codes].append(len(truth & {int(h.memory_id[1:]) for h in hits}) / 10)
        store.close()
    assert np.mean(found["int8"]) >= np.mean(found["none"]) - 0.02, found


def test_built_segments_keep_their_payload_indexes_in_mapped_files_and_an_older_shard_converts(tmp_path):
    """EDGE_PAYLOAD_INDEXES_ON_DISK: a built segment's keyword, float and text indexes are
    memory-mapped, not rebuilt in the heap at each open. A shard built with them in the heap has
    them rebuilt when next opened with the setting on, and answers filtered, ranged and keyword
    searches as before. 7,000 points: Edge builds nothing below ~6,600 of 384 dimensions."""
    from datetime import datetime, timezone

    import numpy as np

    rows = np.random.default_rng(11).normal(size=(7000, 384)).astype(np.float32)
    words = ("lake", "sunset", "garden", "violin", "harbour")
    path = str(tmp_path / "shard")

    def answers(store) -> tuple:
        query = rows[3].tolist()
        tagged = store.search(VectorQuery(query, 20, Scope(TagFilter(("chat:3",), "any", "exact"))))
        ranged = store.search(VectorQuery(query, 20, Scope(start_epoch=1_700_000_000 + 6000)))
        text = store.text_search("violin harbour", Scope(), 20)
        return ([h.memory_id for h in tagged], [h.memory_id for h in ranged], sorted(h.memory_id for h in text))

    def built_on_disk() -> list[dict[str, bool]]:
        return [edge_segments.payload_indexes_on_disk(directory) for directory, _ in edge_segments.built(path)]

    store = EdgeVectorStore(path, 384, optimize_min_changes=1, payload_indexes_on_disk=False)
    store.ensure_collection()
    store.upsert([VectorPoint(f"m{i}", row.tolist(), vector_payload({
        "id": f"m{i}", "content": f"{words[i % 5]} and {words[i % 3]} number {i}", "tags": [f"chat:{i % 7}"],
        "type": "Context", "importance": (i % 10) / 10,
        "timestamp": datetime.fromtimestamp(1_700_000_000 + i, timezone.utc).isoformat()})) for i, row in enumerate(rows)])
    store.maintain()  # builds in this process (no child configured, plain size 0)
    store.finish_build()
    before = answers(store)
    store.close()
    in_heap = built_on_disk()
    assert in_heap and all(not any(fields.values()) for fields in in_heap), in_heap

    store = EdgeVectorStore(path, 384, optimize_min_changes=1)  # the default: on disk
    store.ensure_collection()
    mapped = built_on_disk()
    assert mapped and all(all(fields.values()) for fields in mapped), mapped
    assert set(mapped[0]) >= {"tags_lower", "tag_prefixes", "lifecycle", "timestamp_epoch", "importance", "content"}
    assert answers(store) == before and all(before), before
    store.close()


def test_a_shard_under_its_plain_size_has_no_build_pending(tmp_path):
    """Its changes stay counted for the first build past the plain size, but no build is coming:
    SIMILAR_TO must not wait for one (a 100k import once held every linking message for its
    longest wait, 300 s, on a 103k-point plain shard)."""
    store = EdgeVectorStore(str(tmp_path / "shard"), SIZE, optimize_min_changes=1, plain_max_points=5)
    store.ensure_collection()
    store.upsert([point(f"p{i}", i, ["t"]) for i in range(4)])
    assert store.pending_changes() == 4 and store.build_pending() == 0
    store.upsert([point(f"q{i}", i, ["t"]) for i in range(3)])  # 7 points: past the plain size
    assert store.build_pending() == 7
    store.maintain()  # the build comes (in this process: no child configured)
    store.finish_build()
    assert store.pending_changes() == store.build_pending() == 0
    store.close()


# --- keyword search in the Edge shard (issue 7/3) ----------------------------------------------
def text_point(memory_id: str, i: int, content: str, tags: list[str], archived: bool = False) -> VectorPoint:
    memory = {"id": memory_id, "content": content, "tags": tags, "type": "Context", "importance": 0.5,
              "timestamp": "2025-01-01T00:00:00+00:00", "metadata": {"k": i}, "archived": archived}
    return VectorPoint(memory_id, unit(i), vector_payload(memory))


TEXTS = {
    "paint": "Caroline painted a sunset over the lake in Sweden",
    "paint2": "Melanie paints with her kids; painting calms her",
    "name": "Caroline went to the support group again",
    "other": "the weather was grey all week",
    "gone": "painting lessons in Sweden, long ago",
}


def test_edge_text_search_ranks_by_bm25_in_scope_with_vectors(tmp_path):
    store = EdgeVectorStore(str(tmp_path / "shard"), SIZE)
    store.ensure_collection()
    assert store.text_ready  # a new shard indexes content from its first point
    store.upsert([text_point(m, i, text, ["chat:a" if m != "paint2" else "chat:b"], archived=m == "gone")
                  for i, (m, text) in enumerate(TEXTS.items())])
    hits = store.text_search("caroline painting sweden", Scope(), 10)
    # stems meet ("painting" ~ "painted" ~ "paints"); unrelated memories are out; the archived
    # one never comes back (though it counts in IDF); the rarer word ranks higher: "caroline"
    # is in 2 memories, a form of "paint" in 3, so "name" passes "paint2" and its two "paint"s
    assert ids(hits) == ["paint", "name", "paint2"]
    assert hits[0].score > hits[1].score > hits[2].score > 0
    assert hits[0].vector == pytest.approx(unit(0)) and hits[0].payload["content"] == TEXTS["paint"]
    assert hits[0].payload["metadata"] == {"k": 0}  # the packed document still reads back whole
    scoped = store.text_search("painting", Scope(tags=TagFilter(("chat:a",), "any", "exact")), 10)
    assert ids(scoped) == ["paint"]
    assert store.text_search("zebrafish", Scope(), 10) == []


def test_server_backend_leaves_keyword_search_to_the_graph():
    store = QdrantServerVectorStore.connect(Settings(qdrant_url=":memory:"), SIZE)
    store.ensure_collection()
    assert store.text_search("anything", Scope(), 5) is None


def test_an_older_edge_shard_is_migrated_once_by_maintenance(tmp_path, monkeypatch):
    """A shard written before content was a native field (content inside the packed document,
    no marker) answers keyword search from the graph (None) until maintain() repacks it; then its
    payloads read back unchanged and the text index finds them."""
    from pipeline.vectors import edge as edge_store
    from pipeline.vectors import edge_text

    path = str(tmp_path / "old")
    old_native = edge_store.EDGE_NATIVE_FIELDS - {edge_text.TEXT_FIELD}
    monkeypatch.setattr(edge_store, "EDGE_NATIVE_FIELDS", old_native)
    old = EdgeVectorStore(path, SIZE)
    old.ensure_collection()
    old.upsert([text_point(m, i, text, ["chat:a"]) for i, (m, text) in enumerate(TEXTS.items()) if m != "gone"])
    raw = old._shard.retrieve([point_id_for("paint")], True, False)
    assert edge_text.TEXT_FIELD not in raw[0].payload  # really the old layout
    before = old.retrieve(list(TEXTS))
    old.close()
    (tmp_path / "old" / edge_text.MARKER).unlink()
    monkeypatch.undo()

    # Without EDGE_TEXT_BACKFILL the shard stays as it is (the repack's index build would stall
    # the process): keyword search keeps using the graph.
    untouched = EdgeVectorStore(path, SIZE, optimize_min_changes=3)
    untouched.ensure_collection()
    untouched.maintain()
    assert not untouched.text_ready and untouched.text_search("painting", Scope(), 10) is None
    untouched.close()

    store = EdgeVectorStore(path, SIZE, optimize_min_changes=3, text_backfill=True)
    store.ensure_collection()
    assert not store.text_ready and store.text_search("painting", Scope(), 10) is None
    store._shard = shard = _CountingShard(store._shard)
    store.maintain()
    # the repacked points left their indexed segment: the same maintenance pass rebuilt the index
    assert shard.optimize_threads == [threading.current_thread().name]
    assert store.text_ready and ids(store.text_search("painting", Scope(), 10)) == ["paint2", "paint"]
    assert {m: r.payload for m, r in store.retrieve(list(TEXTS)).items()} == {m: r.payload for m, r in before.items()}
    store.upsert([text_point("new", 7, "a painting of Sweden", ["chat:a"])])
    assert "new" in ids(store.text_search("painting", Scope(), 10))
    store.close()
    reopened = EdgeVectorStore(path, SIZE)
    reopened.ensure_collection()
    assert reopened.text_ready  # the marker says so: no second migration
    reopened.close()


def test_an_edge_shard_below_its_plain_size_is_never_built_and_still_answers(tmp_path, monkeypatch):
    """Up to EDGE_PLAIN_MAX_POINTS the shard's segments stay plain (an HNSW build holds the GIL,
    so the web would answer nothing meanwhile): maintenance runs no optimize(), nothing is
    indexed, and dense search, filters, exclusions and BM25 text search answer from the scan.
    Past the plain size the index is built as before."""
    import numpy as np

    dims, count = 384, 7000  # past Qdrant's default indexing threshold (10,000 KB of vectors)
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((count, dims)).astype("float32")
    store = EdgeVectorStore(str(tmp_path / "shard"), dims, optimize_min_changes=1, plain_max_points=count + 1)
    store.ensure_collection()
    shard = store._shard = _CountingShard(store._shard)

    def memory(i: int) -> VectorPoint:
        payload = vector_payload({"id": f"m{i}", "content": TEXTS["other"] if i else TEXTS["paint"],
                                  "tags": [f"chat:{i % 50}"], "type": "Context", "importance": 0.5,
                                  "timestamp": "2025-01-01T00:00:00+00:00", "archived": i == 1})
        return VectorPoint(f"m{i}", vectors[i].tolist(), payload)

    for start in range(0, count, 1000):
        store.upsert([memory(i) for i in range(start, start + 1000)])
    store.delete(["m2"])
    assert not store.build_due()
    store.maintain()
    assert shard.optimize_threads == [] and store.indexed_points() == 0 and store.pending_changes() == count + 1
    assert store.count() == count - 1

    assert ids(store.search(VectorQuery(vectors[5].tolist(), 1))) == ["m5"]
    tagged = store.search(VectorQuery(vectors[5].tolist(), 5, Scope(TagFilter(("chat:7",)))))
    assert len(tagged) == 5 and {h.payload["tags"][0] for h in tagged} == {"chat:7"}
    assert ids(store.search(VectorQuery(vectors[1].tolist(), 1, Scope(TagFilter(("chat:1",)))))) != ["m1"]  # archived
    assert ids(store.search(VectorQuery(vectors[2].tolist(), 1))) != ["m2"]  # deleted
    assert [ids(hits) for hits in store.search_many([VectorQuery(vectors[i].tolist(), 1) for i in (3, 4)])] == [["m3"], ["m4"]]
    # a batch split into one call per query (each call holds the GIL): same answers, same order
    from pipeline.vectors import edge as edge_store
    monkeypatch.setattr(edge_store, "SEARCH_BATCH_SCAN_POINTS", count // 2)
    assert store._search_batch_size() == 1
    batch = store.search_many([VectorQuery(vectors[i].tolist(), 1, Scope(TagFilter((f"chat:{i}",)))) for i in (1, 3, 4, 6)])
    assert len(batch[0]) == 1 and ids(batch[0]) != ["m1"]  # archived: run again with the exclusions
    assert [ids(hits) for hits in batch[1:]] == [["m3"], ["m4"], ["m6"]]
    assert ids(store.text_search("caroline painting", Scope(), 5)) == ["m0"]

    store._plain_max_points = count - 2  # the store has grown past its plain size: built as before
    assert store.build_due()
    store.maintain()
    assert len(shard.optimize_threads) == 1 and store.indexed_points() > 0
    assert ids(store.search(VectorQuery(vectors[5].tolist(), 1))) == ["m5"]
    assert ids(store.text_search("caroline painting", Scope(), 5)) == ["m0"]
    store.close()


def _open_segments_only(shard_dir, tmp_path, name: str) -> int:
    """Points a copy of the shard holds in its segments alone: the copy is taken while the shard
    is open (what a killed process leaves on disk), and its write-ahead log is left out."""
    import shutil

    copy = tmp_path / name
    shutil.copytree(shard_dir, copy, ignore=shutil.ignore_patterns("wal", "*.lock"))
    reopened = EdgeVectorStore(str(copy), SIZE)
    reopened.ensure_collection()
    try:
        return reopened.count()
    finally:
        reopened.close()


def test_edge_persist_puts_writes_in_the_segments_so_a_start_replays_no_log(tmp_path):
    shard_dir = tmp_path / "shard"
    store = EdgeVectorStore(str(shard_dir), SIZE)
    store.ensure_collection()
    store.upsert([point(f"p{i}", i, ["t"]) for i in range(20)])
    # Unflushed, the points live in the write-ahead log only: a start would replay all of them.
    assert _open_segments_only(shard_dir, tmp_path, "before") == 0
    assert store.persist() == 20
    assert _open_segments_only(shard_dir, tmp_path, "after") == 20
    assert store.persist() == 0  # nothing written since: no flush
    store.set_payloads({"p1": {"importance": 0.9}})
    store.delete(["p2"])
    assert store.persist() == 2
    assert _open_segments_only(shard_dir, tmp_path, "again") == 19
    store.close()


def test_edge_memory_count_from_the_shard_info_matches_a_filtered_count(tmp_path):
    """/health's vector count is the shard's point count less the excluded types' (both cheap):
    it must equal the exact count of the points not excluded, whatever the shard went through
    (overwrites, a type changed in place, deletes, an index build, a flush and a reopen)."""
    excluded = frozenset({"MetaPattern"})
    store = EdgeVectorStore(str(tmp_path / "shard"), SIZE, optimize_min_changes=1)

    def exact() -> int:
        qe = store._qe
        flt = qe.Filter(must_not=[qe.FieldCondition(key="type", match=qe.MatchAny(sorted(excluded)))])
        return int(store._shard.count(qe.CountRequest(exact=True, filter=flt)))

    store.ensure_collection()
    assert store.count_memories(excluded) == 0
    store.upsert([point(f"p{i}", i, ["t"], "MetaPattern" if i % 5 == 0 else "Context") for i in range(40)])
    assert store.count_memories(excluded) == exact() == 32 and store.count_memories() == 40
    store.upsert([point(f"p{i}", i, ["t"], "MetaPattern") for i in range(1, 4)])  # overwrites, now excluded
    assert store.count_memories(excluded) == exact() == 29
    store.set_payloads({"p0": {"type": "Context"}, "p6": {"type": "MetaPattern"}})
    assert store.count_memories(excluded) == exact() == 29
    store.delete(["p0", "p7", "p8", "missing"])
    assert store.count_memories(excluded) == exact() == 26 and store.count_memories() == 37
    store.maintain()
    store.persist()
    assert store.count_memories(excluded) == exact() == 26
    store.close()

    store = EdgeVectorStore(str(tmp_path / "shard"), SIZE)
    store.ensure_collection()
    assert store.count_memories(excluded) == exact() == 26 and store.count_memories() == 37
    store.close()


def test_graph_memory_count_leaves_excluded_types_out_by_their_index(servers):
    """The label's count less the excluded types' (two cheap reads, /health's every call): a
    memory with no type counts, a missing graph counts nothing, the type index is in place."""
    graph_name = f"count_{uuid.uuid4().hex[:8]}"
    store = GraphStore(FalkorDB(host="127.0.0.1", port=servers.graph.port), graph_name)
    assert store.count_memories({"MetaPattern"}) == 0  # never written
    store.ensure_schema()
    store.upsert_memories([build_new_record({"content": f"m{i}", "id": f"m{i}", "type": "Context"}, LIMITS) for i in range(7)])
    raw = FalkorDB(host="127.0.0.1", port=servers.graph.port).select_graph(graph_name)
    # consolidation's MetaPattern memories are written by the cluster cycle, not through the API
    raw.query("UNWIND range(1, 3) AS i CREATE (:Memory {id: 'pattern-' + toString(i), type: 'MetaPattern'})")
    raw.query("CREATE (:Memory {id: 'untyped', content: 'x'})")
    assert store.count_memories() == 11
    assert store.count_memories({"MetaPattern"}) == 8
    assert store.count_memories({"MetaPattern", "Context"}) == 1
    assert "Node By Index Scan" in str(raw.explain("MATCH (m:Memory) WHERE m.type IN $excluded RETURN count(m)",
                                                   {"excluded": ["MetaPattern"]}))


def _built_storage(path: str) -> list[tuple[str, bool]]:
    """Each built segment's vector storage type and whether its int8 codes are kept in RAM."""
    return [(vectors["storage_type"], vectors["quantization_config"]["scalar"]["always_ram"])
            for _, vectors in edge_segments.built(path)]


def test_built_segments_keep_vectors_and_codes_in_mapped_files(tmp_path):
    """EDGE_VECTORS_ON_DISK (default): a build leaves the float32 vectors and the codes in
    memory-mapped files (opening the shard copies neither into the heap); off, both are loaded
    into RAM. A shard built in RAM is rebuilt to match at its next build. 7,000 points: past
    Edge's own indexing threshold."""
    import numpy as np

    rows = np.random.default_rng(3).normal(size=(7001, 384)).astype(np.float32)

    def fill(store, ids):
        store.ensure_collection()
        store.upsert([VectorPoint(f"m{i}", rows[i].tolist(), vector_payload({"id": f"m{i}", "content": "c", "tags": ["t"]}))
                      for i in ids])
        store.maintain()  # builds in this process (no child configured, plain size 0)

    on_disk = EdgeVectorStore(str(tmp_path / "disk"), 384, optimize_min_changes=1)
    fill(on_disk, range(7000))
    assert _built_storage(str(tmp_path / "disk")) == [("Mmap", False)]
    hit = on_disk.search(VectorQuery(rows[5].tolist(), 1))[0]
    assert hit.memory_id == "m5" and hit.score == pytest.approx(1.0, abs=1e-5)
    on_disk.close()

    in_ram = EdgeVectorStore(str(tmp_path / "ram"), 384, optimize_min_changes=1, vectors_on_disk=False)
    fill(in_ram, range(7000))
    assert _built_storage(str(tmp_path / "ram")) == [("InRamMmap", True)]
    in_ram.close()
    converted = EdgeVectorStore(str(tmp_path / "ram"), 384, optimize_min_changes=1, optimize_min_share=0)
    fill(converted, [7000])  # one change: the next build
    assert _built_storage(str(tmp_path / "ram")) == [("Mmap", False)]
    assert converted.count() == 7001 and converted.search(VectorQuery(rows[7000].tolist(), 1))[0].memory_id == "m7000"
    converted.close()
