"""A small OpenAI-compatible chat server for tests: real HTTP, scripted answers.

The reply depends on a marker in the user message, so one server serves every case:

- ``[slow]``      sleeps past any sane client timeout before answering
- ``[429]``       answers 429 Too Many Requests
- ``[500]``       answers 500
- ``[garbage]``   answers 200 with a reply that is not JSON
- ``[badtype]``   answers 200 with a type that is not a memory type
- otherwise       a classification (``type`` from ``FakeLLM.answer_type``) or, when the
                  system prompt asks for a summary, ``{"summary": "LLM summary: ..."}``
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that timed out closed the socket first: expected here, not news.
        pass


class FakeLLM:
    def __init__(self, answer_type: str = "Insight", slow_seconds: float = 3.0):
        self.answer_type = answer_type
        self.slow_seconds = slow_seconds
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def _send(self, status: int, body: dict | str) -> None:
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                request = json.loads(self.rfile.read(length) or b"{}")
                request["_received_at"] = time.time()  # for rate-limit tests
                with fake._lock:
                    fake.requests.append(request)
                status, content = fake.reply(request)
                if status != 200:
                    self._send(status, {"error": {"message": f"scripted {status}", "type": "test"}})
                    return
                self._send(200, {
                    "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
                    "model": request.get("model", "fake"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                })

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> "FakeLLM":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def calls_with(self, marker: str) -> int:
        with self._lock:
            return sum(1 for r in self.requests if marker in r["messages"][-1]["content"])

    def arrival_times(self, marker: str) -> list[float]:
        """When the requests carrying ``marker`` arrived (epoch seconds), in order."""
        with self._lock:
            return sorted(r["_received_at"] for r in self.requests if marker in r["messages"][-1]["content"])

    def reply(self, request: dict) -> tuple[int, str]:
        system, user = request["messages"][0]["content"], request["messages"][-1]["content"]
        if "[slow]" in user:
            time.sleep(self.slow_seconds)
        if "[429]" in user:
            return 429, ""
        if "[500]" in user:
            return 500, ""
        if "[garbage]" in user:
            return 200, "I think this is probably a Decision, but who knows"
        if "[badtype]" in user:
            return 200, json.dumps({"type": "Banana", "confidence": 0.9})
        if "summar" in system.lower():
            return 200, json.dumps({"summary": "LLM summary: " + user[:40]})
        return 200, "```json\n" + json.dumps({"type": self.answer_type, "confidence": 0.77}) + "\n```"
