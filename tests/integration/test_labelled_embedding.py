"""Labelled content is stored as the mean of its labelled sentences' vectors (EMBED_LABELLED_SENTENCES).

The stack runs the hash provider, so the expected vectors can be computed here exactly; a
recall by ``embedding`` then reports the stored vector's cosine with it as the vector component.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from pipeline.embedding import HashEmbedder
from pipeline.labelled import labelled_sentences

pytestmark = pytest.mark.integration


def _store(api, content: str, tag: str) -> str:
    response = api.post("/memory", json={"content": content, "tags": [tag]})
    assert response.status_code == 201, response.text
    return response.json()["memory_id"]


def _vector_score(api, memory_id: str, tag: str, vector: list[float]) -> float:
    response = api.get("/recall", params={"embedding": ",".join(f"{x:.7f}" for x in vector), "tags": tag, "limit": 10})
    assert response.status_code == 200, response.text
    by_id = {r["id"]: r for r in response.json()["results"]}
    return by_id[memory_id]["score_components"]["vector"]


def test_labelled_content_is_stored_as_its_labelled_sentences_mean(api):
    tag = f"lab-{uuid.uuid4().hex[:10]}"
    hasher = HashEmbedder()
    labelled = "Caroline: I went to a support group yesterday. It was so powerful! We talked for hours."
    plain = "I went to a support group yesterday. It was so powerful! We talked for hours."
    labelled_id, plain_id = _store(api, labelled, tag), _store(api, plain, tag)

    sentences = labelled_sentences(labelled)
    assert sentences == ["Caroline: I went to a support group yesterday.", "Caroline: It was so powerful!",
                         "Caroline: We talked for hours."]
    mean = np.asarray(hasher.embed(sentences)).sum(axis=0)
    mean /= np.linalg.norm(mean)
    assert _vector_score(api, labelled_id, tag, mean.tolist()) == pytest.approx(1.0, abs=1e-4)
    # not the whole text's vector: that one is a different direction
    assert _vector_score(api, labelled_id, tag, hasher.embed([labelled])[0]) < 0.95
    # unlabelled content is embedded whole, as before
    assert _vector_score(api, plain_id, tag, hasher.embed([plain])[0]) == pytest.approx(1.0, abs=1e-4)
