"""Labelled sentences: which content takes the path, how it is split, and the averaged vector."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.embedding import HashEmbedder
from pipeline.labelled import MAX_SENTENCES, embed_contents, labelled_sentences


@pytest.mark.parametrize("text, expected", [
    ("Caroline: I went yesterday. It was great!", ["Caroline: I went yesterday.", "Caroline: It was great!"]),
    ("Jon Smith: Hi! \"Really?\" she said.", ["Jon Smith: Hi!", "Jon Smith: \"Really?\"", "Jon Smith: she said."]),
    ("Mel: first line\nsecond line", ["Mel: first line", "Mel: second line"]),
    ("Dr. O'Neil-Hart: Done. Next (see notes.) Then.",
     ["Dr. O'Neil-Hart: Done.", "Dr. O'Neil-Hart: Next (see notes.)", "Dr. O'Neil-Hart: Then."]),
])
def test_labelled_content_splits_into_sentences_that_carry_the_label(text, expected):
    assert labelled_sentences(text) == expected


@pytest.mark.parametrize("text", [
    "Caroline: only one sentence here.",          # one sentence: embedded whole
    "No label at all. Two sentences.",            # no label
    "https://example.com/a is down. Fix it.",     # a URL's colon has no space after it
    "10:30: standup. Then review.",               # a label starts with a letter
    "Re the plan for Q3 and beyond: yes. no.",    # more than four words before the colon
    "Caroline:",                                  # nothing after the label
])
def test_other_content_is_embedded_whole(text):
    assert labelled_sentences(text) is None


def test_a_long_text_is_capped_at_max_sentences():
    text = "Ann: " + " ".join(f"Sentence {i}." for i in range(MAX_SENTENCES + 10))
    sentences = labelled_sentences(text)
    assert len(sentences) == MAX_SENTENCES
    assert sentences[-1].startswith(f"Ann: Sentence {MAX_SENTENCES - 1}.") and sentences[-1].endswith(f"{MAX_SENTENCES + 9}.")


class _CountingEmbedder(HashEmbedder):
    def __init__(self):
        super().__init__()
        self.calls: list[list[str]] = []

    def embed(self, texts):
        self.calls.append(list(texts))
        return super().embed(texts)


def test_embed_contents_averages_labelled_sentences_in_one_provider_call():
    embedder = _CountingEmbedder()
    texts = ["plain text. two sentences.", "Caroline: I went yesterday. It was great!", "Mel: one."]
    vectors = embed_contents(embedder, texts)
    assert len(embedder.calls) == 1 and len(embedder.calls[0]) == 4  # 1 + 2 sentences + 1
    hasher = HashEmbedder()
    assert vectors[0] == pytest.approx(hasher.embed([texts[0]])[0])
    assert vectors[2] == pytest.approx(hasher.embed([texts[2]])[0])
    mean = np.asarray(hasher.embed(["Caroline: I went yesterday.", "Caroline: It was great!"])).sum(axis=0)
    assert vectors[1] == pytest.approx((mean / np.linalg.norm(mean)).tolist())
    assert np.linalg.norm(vectors[1]) == pytest.approx(1.0)


def test_embed_contents_off_or_without_labels_passes_texts_through():
    embedder = _CountingEmbedder()
    texts = ["Caroline: I went yesterday. It was great!", "plain"]
    assert embed_contents(embedder, texts, labelled=False) == HashEmbedder().embed(texts)
    assert embed_contents(embedder, ["a. b.", "plain"]) == HashEmbedder().embed(["a. b.", "plain"])
    assert embedder.calls == [texts, ["a. b.", "plain"]]


def test_embed_contents_f32_is_embed_contents_as_one_float32_matrix():
    from pipeline.labelled import embed_contents_f32

    texts = ["Caroline: I went to a support group. It was powerful!", "plain text", "Mel: One. Two. Three."]
    for labelled in (True, False):
        matrix = embed_contents_f32(HashEmbedder(), texts, labelled=labelled)
        assert matrix.dtype == np.float32 and matrix.shape == (3, HashEmbedder().dimensions)
        expected = np.asarray(embed_contents(HashEmbedder(), texts, labelled=labelled), dtype=np.float32)
        assert np.allclose(matrix, expected, atol=1e-6)
    # a provider without embed_f32 (a plain list one) goes through embed()
    class _ListOnly:
        name, dimensions, semantic = "list", 3, False

        def embed(self, texts):
            return [[1.0, 0.0, 0.0] for _ in texts]
    assert embed_contents_f32(_ListOnly(), ["a", "b"]).tolist() == [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
