"""Dramatiq actors, one module per stage. ``dramatiq pipeline.actors`` runs them.

Importing this package installs the broker from the process's settings, with the context its
actors read (``pipeline.actor_context``): the process's ``Services`` (built lazily, once) and
the migration cycle's hook for the write path. The actors bind to that broker as they are
declared through the map (``pipeline.stages``).
"""

from pipeline.actor_context import ActorContext, StageHooks
from pipeline.broker import install_broker
from pipeline.config import get_settings
from pipeline.maintenance.migrate import settle_outstanding
from pipeline.observability.logs import configure_logging
from pipeline.services import Services

configure_logging(get_settings(), role="worker")  # no-op in the web process, which configured first
broker = install_broker(get_settings(), ActorContext(Services(get_settings()), StageHooks(copies_settled=settle_outstanding)))

from pipeline.actors import access, consolidate, embed, enrich, persist, relations, similarity, vectors  # noqa: E402,I001  (actors bind to the broker above)

__all__ = ["access", "broker", "consolidate", "embed", "enrich", "persist", "relations", "similarity", "vectors"]
