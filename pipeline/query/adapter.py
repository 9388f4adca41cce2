"""An opt-in learned linear map from a question's embedding towards the turns that answer it.

A sentence model places a question ("When did Kate start pottery?") nearer to other questions
and to short lines that repeat its words than to the statement that answers it ("I signed up
for a pottery class last week"). A ``d × d`` matrix fitted on questions and their evidence
turns (``ops/bench/train_query_adapter.py``) moves a text query's vector towards statements;
the vector is normalised again after. It maps the query only: stored memories, SIMILAR_TO and
a client's own ``embedding`` are untouched, so turning it on or off needs no re-embedding.

``RECALL_QUERY_ADAPTER`` names the file; ``off`` (the default) uses none. None ships: fitted on
the dev conversations and scored on conversations it never saw, it moved recall@10 by +0.009 on
LoCoMo and 0.000 on REALTALK, with a category of each down (docs/recall.md, "Real conversations").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pipeline.embedding import provider_dimensions
from pipeline.errors import ConfigurationError

if TYPE_CHECKING:
    from pipeline.config import Settings


@dataclass(frozen=True)
class QueryAdapter:
    model: str
    matrix: np.ndarray  # (d, d) float32: adapted = matrix @ query

    @property
    def dimensions(self) -> int:
        return int(self.matrix.shape[0])

    def apply(self, vector: list[float]) -> list[float]:
        if len(vector) != self.dimensions:
            return vector  # not a vector of the size the map was checked against at start: unmapped
        adapted = self.matrix @ np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(adapted))
        return (adapted / norm).tolist() if norm else vector


def save_adapter(path: Path, model: str, matrix: np.ndarray) -> None:
    np.savez_compressed(path, model=np.array(model), matrix=matrix.astype(np.float16))


def load_adapter(path: Path) -> QueryAdapter:
    try:
        with np.load(path, allow_pickle=False) as data:
            model, matrix = str(data["model"]), data["matrix"].astype(np.float32)
    except (OSError, KeyError, ValueError) as exc:
        raise ConfigurationError(f"RECALL_QUERY_ADAPTER: cannot read {path} ({exc})") from None
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ConfigurationError(f"RECALL_QUERY_ADAPTER: {path} holds a {matrix.shape} matrix, not a square one")
    return QueryAdapter(model, matrix)


def adapter_for(settings: Settings) -> QueryAdapter | None:
    """The adapter the settings name, or None; one of another size than the provider's vectors
    is a configuration error (a map fitted for another model)."""
    if settings.recall_query_adapter == "off":
        return None
    adapter = load_adapter(Path(settings.recall_query_adapter))
    produced = provider_dimensions(settings)
    if adapter.dimensions != produced:
        raise ConfigurationError(
            f"RECALL_QUERY_ADAPTER: {settings.recall_query_adapter} maps {adapter.dimensions}-dimensional vectors "
            f"({adapter.model}) but the embedding provider produces {produced}"
        )
    return adapter
