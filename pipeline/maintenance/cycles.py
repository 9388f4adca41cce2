"""The shape every maintenance run has: phases of small, resumable steps.

A cycle is a list of phases; a phase is a step function called again and again with a
cursor until it returns none. Each step is one Dramatiq message handling one page (at most
``MAINTENANCE_PAGE_SIZE`` memories), so memory stays bounded at any store size and a crash
loses one page of progress, not the run.

Where a step runs is decided by what it touches:

- ``GRAPH`` steps run on the ``maintenance`` queue (any worker). They never open the vector
  store; vector changes they cause are sent as messages to the ``vectors`` queue.
- ``VECTORS`` steps read or write the vector store themselves, so they run on the ``vectors``
  queue: in the embedded default only the web process consumes it, because only it may open
  the Qdrant Edge shard; with a Qdrant server every worker does. Because every step is one
  page, the write path's vector messages interleave with a long maintenance run instead of
  queueing behind it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Protocol

from pipeline.maintenance.runs import Run, RunStore
from pipeline.services import Services
from pipeline.stages import EmbedItem, VectorItem

GRAPH, VECTORS = "graph", "vectors"


class Outbox(Protocol):
    """Messages a step may send (``pipeline.stages``' send helpers; a recorder in unit tests)."""

    def patch_payloads(self, payloads: dict[str, dict[str, Any]]) -> None: ...
    def drop_vectors(self, memory_ids: list[str]) -> None: ...
    def embed(self, items: list[EmbedItem]) -> None: ...
    def index(self, items: list[VectorItem]) -> None: ...


@dataclass
class RunContext:
    services: Services
    runs: RunStore
    run: Run
    outbox: Outbox

    @property
    def settings(self):
        return self.services.settings

    @property
    def now(self) -> datetime:
        """The run's clock: fixed at its start, so a redelivered step computes the same values."""
        return datetime.fromtimestamp(self.run.started_at, tz=timezone.utc)

    @property
    def page_size(self) -> int:
        return self.settings.maintenance_page_size

    @property
    def dry_run(self) -> bool:
        return self.run.dry_run


@dataclass
class StepResult:
    counts: dict[str, int] = field(default_factory=dict)
    samples: dict[str, list[str]] = field(default_factory=dict)
    cursor: Any = None  # where the next step of this phase starts; None: the phase is done
    delay_s: float = 0.0  # wait this long before the next step (a step that polls for queued work)
    refused: str | None = None  # set: the run stops here, settled as refused with this reason

    def count(self, kind: str, ids: list[str]) -> None:
        """Count findings of one kind and keep a few of their ids as samples."""
        if ids:
            self.counts[kind] = self.counts.get(kind, 0) + len(ids)
            self.samples.setdefault(kind, []).extend(ids[:10])

    def add(self, kind: str, number: int) -> None:
        if number:
            self.counts[kind] = self.counts.get(kind, 0) + number


Step = Callable[[RunContext, Any], StepResult]


@dataclass(frozen=True)
class Phase:
    name: str
    where: str  # GRAPH or VECTORS
    step: Step


def registry() -> dict[str, list[Phase]]:
    """Every cycle by name (imported here so the modules stay free of each other)."""
    from pipeline.maintenance import cluster, creative, decay, forget, migrate, recover, reembed, sync

    return {
        "decay": decay.PHASES,
        "creative": creative.PHASES,
        "cluster": cluster.PHASES,
        "forget": forget.PHASES,
        "sync": sync.PHASES,
        "reembed": reembed.PHASES,
        "migrate": migrate.PHASES,
        "recover": recover.PHASES,
    }


CONSOLIDATION_MODES = ("decay", "creative", "cluster", "forget")
