"""A web process whose vector store can be cut off, for the vector-outage fault test.

Everything is the real app over the real Qdrant Edge shard; only the boundary between
them is switched, as a network partition would: while the file named by
``MEMPIPE_TEST_VECTOR_OUTAGE`` exists, every call into the vector store raises
ConnectionError, which is what a Qdrant server that stopped answering looks like to the
code. The in-process vector actors share these services, so their writes fail too.

    uvicorn tests.vector_outage:create_partitioned_app --factory
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from api.app import create_app
from pipeline.config import get_settings
from pipeline.services import Services


class PartitionedVectors:
    """Forwards to the real store unless the outage switch is on."""

    def __init__(self, store: Any, switch: Path):
        self._store = store
        self._switch = switch

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            if self._switch.exists():
                raise ConnectionError(f"vector store unreachable (injected outage during {name})")
            return attr(*args, **kwargs)

        return call


class PartitionableServices(Services):
    """Every vector store these services hand out (the live collection, a migration's target)
    sits behind the switch: recall, the vector actors and the router all reach Qdrant through it."""

    def __init__(self, settings, switch: Path):
        super().__init__(settings)
        self._switch = switch
        self._partitioned: dict[str, PartitionedVectors] = {}

    def vector_store(self, spec):
        wrapped = self._partitioned.get(spec.name)
        if wrapped is None:
            wrapped = self._partitioned[spec.name] = PartitionedVectors(super().vector_store(spec), self._switch)
        return wrapped


def create_partitioned_app() -> FastAPI:
    settings = get_settings()
    switch = Path(os.environ["MEMPIPE_TEST_VECTOR_OUTAGE"])
    return create_app(settings, services=PartitionableServices(settings, switch))
