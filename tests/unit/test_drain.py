"""The batching consumer: extra messages are acked only after the batch is written."""

import dramatiq
import pytest

from pipeline.drain import draining


def _message(actor: str, args, rid: str) -> bytes:
    return dramatiq.Message(queue_name="persist", actor_name=actor, args=args, kwargs={},
                            options={"redis_message_id": rid}).encode()


class FakeBroker:
    """The three dispatch commands of Dramatiq's Redis broker, over a list and an ack set."""

    namespace = "mempipe"

    def __init__(self, queued: list[bytes]):
        self.queue = list(queued)
        self.client = self  # lrange/hmget below stand in for the redis client
        self.acks: set[str] = set()
        self.acked: list[str] = []
        self.requeued: list[str] = []

    def lrange(self, key, start, end):
        return list(range(len(self.queue)))[start:end + 1]

    def hmget(self, key, positions):
        return [self.queue[p] for p in positions]

    def do_fetch(self, queue, count):
        taken, self.queue = self.queue[:count], self.queue[count:]
        self.acks |= {dramatiq.Message.decode(m).options["redis_message_id"] for m in taken}
        return taken

    def do_ack(self, queue, rid):
        self.acks.discard(rid)
        self.acked.append(rid)

    def do_requeue(self, queue, *rids):
        self.acks -= set(rids)
        self.requeued += rids


def test_gathers_up_to_the_bound_and_acks_after_success():
    broker = FakeBroker([_message("persist_memories", [[{"id": f"m{i}"}]], f"r{i}") for i in range(20)])
    with draining(broker, "persist", "persist_memories", [{"id": "own"}], max_items=6) as records:
        assert [r["id"] for r in records] == ["own"] + [f"m{i}" for i in range(5)]
        assert broker.acked == []  # nothing acknowledged before the body has run
    assert broker.acked == [f"r{i}" for i in range(5)] and not broker.acks
    assert len(broker.queue) == 15


def test_failure_returns_the_drained_messages_unacked():
    broker = FakeBroker([_message("persist_memories", [[{"id": "a"}]], "ra"), _message("persist_memories", [[{"id": "b"}]], "rb")])
    with pytest.raises(RuntimeError):
        with draining(broker, "persist", "persist_memories", [{"id": "own"}], max_items=100):
            raise RuntimeError("graph down")
    assert broker.acked == [] and broker.requeued == ["ra", "rb"] and not broker.acks


def test_stops_at_another_actors_message_so_nothing_overtakes_it():
    broker = FakeBroker([_message("persist_memories", [[{"id": "a"}]], "ra"), _message("delete_memories", [["a"]], "rd"),
                         _message("persist_memories", [[{"id": "a"}]], "ra2")])
    with draining(broker, "persist", "persist_memories", [{"id": "own"}], max_items=100) as records:
        assert [r["id"] for r in records] == ["own", "a"]
    assert broker.acked == ["ra"] and broker.requeued == [] and len(broker.queue) == 2  # the delete stays first


def test_a_message_lost_in_the_peek_fetch_race_goes_back_and_full_messages_do_not_drain():
    broker = FakeBroker([_message("update_memory", ["x", {"content": "y"}], "ru")])
    seen = _message("persist_memories", [[{"id": "a"}]], "ra")  # what the peek saw before another consumer took it
    broker.client = type("Peek", (), {"lrange": lambda self, *a: [0], "hmget": lambda self, k, p: [seen]})()
    with draining(broker, "persist", "persist_memories", [{"id": "own"}], max_items=100) as records:
        assert [r["id"] for r in records] == ["own"]  # fetched the update instead: put back
    assert broker.requeued == ["ru"] and broker.acked == []

    idle = FakeBroker([_message("persist_memories", [[{"id": "a"}]], "ra")])
    with draining(idle, "persist", "persist_memories", [{"id": str(i)} for i in range(5)], max_items=5) as records:
        assert len(records) == 5  # already at the bound: nothing fetched
    assert len(idle.queue) == 1


def test_each_drained_message_logs_processed_under_its_own_request_id():
    import logging

    from pipeline.observability.requestid import OPTION, request_id

    def traced(i):
        return dramatiq.Message(queue_name="persist", actor_name="persist_memories", args=[[{"id": f"m{i}"}]],
                                kwargs={}, options={"redis_message_id": f"r{i}", OPTION: f"req-{i}"}).encode()

    class Seen(logging.Handler):  # what the JSON log's TraceContext filter would stamp: the live request id
        lines: list = []

        def emit(self, record):
            if record.getMessage() == "message processed":
                self.lines.append((request_id.get(), record.queue))

    handler, logger = Seen(), logging.getLogger("pipeline.drain")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    token = request_id.set("req-own")
    try:
        with draining(FakeBroker([traced(i) for i in range(3)]), "persist", "persist_memories", [{"id": "own"}],
                      max_items=10):
            pass
        with pytest.raises(RuntimeError), draining(FakeBroker([traced(9)]), "persist", "persist_memories",
                                                   [{"id": "own"}], max_items=10):
            raise RuntimeError("write failed")  # its drained message goes back: no line for it
        assert request_id.get() == "req-own"  # the carrier's id is back afterwards
    finally:
        request_id.reset(token)
        logger.removeHandler(handler)
    assert Seen.lines == [("req-0", "persist"), ("req-1", "persist"), ("req-2", "persist")]
