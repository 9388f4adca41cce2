import fakeredis
import pytest

from pipeline.graph import node_properties
from pipeline.maintenance.quarantine import Quarantine
from pipeline.maintenance.recover import node_from_payload
from pipeline.maintenance.sync_guard import GuardState, verdict
from pipeline.records import MemoryRecord
from pipeline.vectors import vector_payload

pytestmark = pytest.mark.security  # pytest -m security: the security suite (docs/testing.md)


def test_an_empty_graph_refuses_any_orphan_delete():
    assert verdict(1, 1, 0, max_share=1.0, max_count=10**9) is not None
    assert "no memories" in verdict(5000, 5000, 0, 0.05, 1000)
    assert verdict(0, 100, 0, 0.05, 1000) is None  # nothing to delete, nothing to refuse


def test_orphans_above_either_bound_are_refused():
    assert verdict(1001, 10**6, 10**6, 0.05, 1000) is not None  # absolute count, tiny share
    assert verdict(1000, 10**6, 10**6, 0.05, 1000) is None
    assert "SYNC_ORPHAN_MAX_SHARE" in verdict(60, 1000, 940, 0.05, 1000)  # 6 % of the vectors
    assert verdict(50, 1000, 950, 0.05, 1000) is None  # exactly 5 %


def test_the_share_bound_waits_for_more_than_ten_orphans():
    # one stray point among seven is 14 %, but deleting it is ordinary drift repair (and quarantined)
    assert verdict(1, 7, 6, 0.05, 1000) is None
    assert verdict(10, 20, 10, 0.05, 1000) is None
    assert verdict(11, 22, 11, 0.05, 1000) is not None


def test_guard_state_trips_reads_and_clears():
    guard = GuardState(fakeredis.FakeRedis())
    assert guard.read() is None
    guard.trip("run-1", "the graph is empty", 12, 12)
    assert guard.read() | {"at": 0} == {"status": "tripped", "reason": "the graph is empty", "orphans": 12,
                                        "vectors_checked": 12, "run_id": "run-1", "at": 0}
    guard.clear()
    assert guard.read() is None


def test_quarantine_pages_in_id_order_and_forgets_only_what_is_removed():
    quarantine = Quarantine(fakeredis.FakeRedis())
    quarantine.put({f"m{i:02}": {"payload": {"content": f"c{i}"}, "vector": [float(i)]} for i in range(5)}, "orphan_vector", "r1")
    quarantine.put({"m02": {"payload": {"content": "again"}, "vector": [2.0]}}, "orphan_vector", "r2")  # replaces
    assert quarantine.count() == 5
    first = quarantine.page(None, 3)
    assert [m for m, _ in first] == ["m00", "m01", "m02"]
    assert first[2][1]["payload"] == {"content": "again"} and first[2][1]["run_id"] == "r2"
    assert [m for m, _ in quarantine.page("m02", 3)] == ["m03", "m04"]
    quarantine.remove(["m00", "m03"])
    assert [m for m, _ in quarantine.page(None, 10)] == ["m01", "m02", "m04"] and quarantine.count() == 3


def test_a_node_rebuilt_from_a_vector_payload_equals_the_original():
    record = MemoryRecord(id="a", content="We chose PostgreSQL", tags=["db", "project:alpha"], importance=0.9,
                          confidence=0.7, type="Decision", type_source="llm", timestamp="2026-01-02T03:04:05+00:00",
                          updated_at="2026-01-03T00:00:00+00:00", metadata={"source": "chat", "n": [1, 2]},
                          t_valid="2026-01-01T00:00:00+00:00")
    # a None property is no property in the graph
    original = {k: v for k, v in node_properties(record.to_message()).items() if v is not None}
    payload = vector_payload({**record.to_message(), "archived": True, "archived_at": "x", "relevance_score": 0.25})
    assert "relevance_score" not in payload  # the decay cycle's score is the node's alone
    rebuilt = node_from_payload(payload)
    assert {k: v for k, v in rebuilt.items() if k not in ("archived", "archived_at")} == original
    assert rebuilt["archived"] is True and rebuilt["archived_at"] == "x"
    # a point written before the score left the payload still brings it back
    assert node_from_payload({**payload, "relevance_score": 0.25})["relevance_score"] == 0.25
