"""ops.slack_import's HTTP sink: kept-alive http.client connections, 429s waited out, retries."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ops.slack_import import HttpBatchSink


class _Api(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as uvicorn
    answers: list[tuple[int, dict]] = []
    seen: list[dict] = []
    connections: set = set()

    def do_POST(self):  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        type(self).connections.add(self.client_address)
        status, answer = type(self).answers.pop(0) if type(self).answers else (201, None)
        if answer is None:
            n = len(body["memories"])
            answer = {"accepted_count": n, "unchanged_count": 0, "failed_count": 0,
                      "results": [{"index": i, "status": "accepted"} for i in range(n)]}
        data = json.dumps(answer).encode()
        self.send_response(status)
        if status == 429:
            self.send_header("Retry-After", "2")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def api():
    _Api.answers, _Api.seen, _Api.connections = [], [], set()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/base/"
    server.shutdown()
    server.server_close()


def test_sends_batches_over_one_kept_alive_connection(api):
    sink = HttpBatchSink(api, {"Authorization": "Bearer t"})
    for i in range(3):
        outcome = sink.send([{"content": f"m{i}"}, {"content": "é ünïcode"}])
        assert outcome.accepted == 2 and outcome.failed == 0
    sink.close()
    assert [s["path"] for s in _Api.seen] == ["/base/memory/batch"] * 3
    assert _Api.seen[0]["auth"] == "Bearer t"
    assert _Api.seen[2]["body"]["memories"][1]["content"] == "é ünïcode"
    assert len(_Api.connections) == 1  # kept alive


def test_waits_out_429_and_retries_5xx_then_reports_item_errors(api):
    slept = []
    _Api.answers = [(429, {"detail": "busy"}), (503, {"detail": "down"}),
                    (207, {"accepted_count": 1, "unchanged_count": 0, "failed_count": 1,
                           "results": [{"index": 0, "status": "accepted"},
                                       {"index": 1, "status": "error", "message": "memories.1.content: empty"}]})]
    sink = HttpBatchSink(api, sleep=slept.append)
    outcome = sink.send([{"content": "a"}, {"content": ""}])
    assert (outcome.accepted, outcome.failed, outcome.errors) == (1, 1, ["memories.1.content: empty"])
    assert slept == [2.0, 0.5] and sink.throttled_seconds == 2.0


def test_an_unexpected_status_is_an_error_and_an_unreachable_api_gives_up(api):
    _Api.answers = [(400, {"detail": "not a batch"})]
    with pytest.raises(RuntimeError, match="answered 400"):
        HttpBatchSink(api, sleep=lambda s: None).send([{"content": "a"}])
    with pytest.raises(RuntimeError, match="unreachable"):
        HttpBatchSink("http://127.0.0.1:9", max_attempts=2, sleep=lambda s: None).send([{"content": "a"}])


class _Clock:
    """A clock that moves only when the sink sleeps."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_429s_are_waited_out_while_the_import_progresses(api):
    # 100 refusals in a row (200 s) for one batch: past the old cap of 30 attempts, but the
    # import is still taking batches, so the sink keeps waiting.
    clock = _Clock()
    sink = HttpBatchSink(api, sleep=clock.sleep, clock=clock, max_stall_s=600)
    _Api.answers = [(429, {"detail": "busy"})] * 100
    assert sink.send([{"content": "a"}]).accepted == 1
    assert clock.now == 200.0 and sink.throttled_seconds == 200.0


def test_an_import_that_nothing_drains_gives_up_with_a_clear_message(api):
    clock = _Clock()
    sink = HttpBatchSink(api, sleep=clock.sleep, clock=clock, max_stall_s=60)
    assert sink.send([{"content": "first"}]).accepted == 1  # accepted at t=0
    _Api.answers = [(429, {"detail": "busy"})] * 100
    with pytest.raises(RuntimeError, match="not draining"):
        sink.send([{"content": "second"}])
    assert 60 < clock.now <= 64  # gave up a Retry-After past the stall bound, not before


def test_5xx_answers_are_retried_a_bounded_number_of_times(api):
    _Api.answers = [(503, {"detail": "down"})] * 5
    with pytest.raises(RuntimeError, match="answered 503 3 times"):
        HttpBatchSink(api, max_attempts=3, sleep=lambda s: None).send([{"content": "a"}])
