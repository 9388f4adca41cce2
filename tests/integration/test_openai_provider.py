"""The openai provider end to end, against an OpenAI-compatible endpoint (OPENAI_BASE_URL).

The endpoint is a small HTTP server in the test process that speaks the embeddings API (float
or base64 encoding, as the official client asks) and records every call; the web and worker
processes reach it through the real `openai` client. Its vectors come from the hash embedder,
so recall is deterministic.
"""

from __future__ import annotations

import base64
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from pipeline.embedding import HashEmbedder
from ops.bench.stack import Stack, wait_until

pytestmark = pytest.mark.integration

DIMENSIONS = 384


class FakeEmbeddings(BaseHTTPRequestHandler):
    calls: list[dict] = []
    embedder = HashEmbedder(DIMENSIONS)

    def do_POST(self):  # noqa: N802 (the stdlib's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        FakeEmbeddings.calls.append({**body, "input": texts, "path": self.path, "auth": self.headers.get("Authorization")})
        vectors = self.embedder.embed(texts)
        data = []
        for index, vector in enumerate(vectors):
            if body.get("encoding_format") == "base64":
                encoded = base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode()
            else:
                encoded = vector
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        data.reverse()  # the API does not promise order: the provider must sort by index
        reply = json.dumps({"object": "list", "model": body["model"], "data": data,
                            "usage": {"prompt_tokens": 7 * len(texts), "total_tokens": 7 * len(texts)}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):  # keep the test output clean
        pass


@pytest.fixture()
def endpoint():
    FakeEmbeddings.calls = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeEmbeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_openai_provider_embeds_a_batch_in_one_call_and_recalls(servers, endpoint):
    stack = Stack.create(servers, EMBEDDING_PROVIDER="openai", OPENAI_API_KEY="sk-test-key", OPENAI_BASE_URL=endpoint,
                         VECTOR_SIZE=str(DIMENSIONS))
    try:
        stack.start_web()
        stack.start_worker()
        tag = f"oa-{uuid.uuid4().hex[:8]}"
        contents = [f"provider batch memory {i} about subject {i * 7}" for i in range(12)]
        with stack.client() as api:
            health = api.get("/health").json()
            assert health["embedding"] == {"provider": "openai", "dimensions": DIMENSIONS, "semantic": True}
            response = api.post("/memory/batch", json={"memories": [{"content": c, "tags": [tag]} for c in contents]})
            assert response.status_code == 201, response.text
            ids = [r["memory_id"] for r in response.json()["results"]]
            wait_until(lambda: api.get("/health").json()["vector_count"] == len(contents), timeout=90,
                       message="every memory embedded through the endpoint")

            document_calls = [c for c in FakeEmbeddings.calls if set(c["input"]) & set(contents)]
            assert len(document_calls) == 1, [len(c["input"]) for c in document_calls]  # one call for the batch
            call = document_calls[0]
            assert sorted(call["input"]) == sorted(contents)
            assert call["path"] == "/v1/embeddings" and call["auth"] == "Bearer sk-test-key"
            assert call["model"] == "text-embedding-3-small" and call["dimensions"] == DIMENSIONS

            # The query is embedded by the web process through the same endpoint; results sorted
            # back by index put each vector on its own memory, so the exact text comes first.
            hits = api.get("/recall", params={"query": contents[5], "tags": tag}).json()["results"]
            assert hits[0]["id"] == ids[5] and hits[0]["score_components"]["vector"] == pytest.approx(1.0, abs=1e-4)
            assert any(c["input"] == [contents[5]] for c in FakeEmbeddings.calls)
    finally:
        stack.stop()
