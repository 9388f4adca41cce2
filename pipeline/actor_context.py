"""What a process gives its actors: its ``Services`` and the hooks the stages call.

The process that installs the broker (``pipeline.actors``: a worker, the clock, or the web
process that owns the Qdrant Edge shard) builds them once and hands them to a Dramatiq
middleware on its broker; an actor reads them from there through ``actor_context()``.
Nothing is stuck onto the broker object and no module holds them, so a test or a process
with other clients swaps them in one place (``use_services``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import dramatiq

if TYPE_CHECKING:
    from pipeline.services import Services

# Called by the write path with the migration copies it has finished with (written, or
# skipped as deleted); the migration cycle counts them off (pipeline.maintenance.migrate).
CopiesSettled = Callable[[Any, Sequence[Mapping[str, Any]]], None]


def _no_migration(client: Any, copies: Sequence[Mapping[str, Any]]) -> None:
    raise RuntimeError(f"{len(copies)} migration copies reached a process without the migration hook")


@dataclass
class StageHooks:
    """Cycles the write path reports to without importing them."""

    copies_settled: CopiesSettled = field(default=_no_migration)


class ActorContext(dramatiq.Middleware):
    """Holds the process's ``Services`` and stage hooks for its actors.

    A middleware so that it travels with the broker it serves; it handles no broker events.
    """

    def __init__(self, services: Services, hooks: StageHooks | None = None):
        self.services = services
        self.hooks = hooks or StageHooks()


def find_context(broker: dramatiq.Broker) -> ActorContext | None:
    return next((m for m in broker.middleware if isinstance(m, ActorContext)), None)


def actor_context(broker: dramatiq.Broker | None = None) -> ActorContext:
    """The context installed on ``broker`` (the process's global broker by default)."""
    context = find_context(broker or dramatiq.get_broker())
    if context is None:
        raise RuntimeError("this broker was built without an ActorContext: import pipeline.actors to install one")
    return context


def services() -> Services:
    """The running actor's services."""
    return actor_context().services


def use_services(broker: dramatiq.Broker, services: Services) -> None:
    """Give the actors on ``broker`` these services (the web process shares its Edge shard)."""
    actor_context(broker).services = services
