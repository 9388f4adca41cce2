"""Dramatiq actors, one module per stage. ``dramatiq pipeline.actors`` runs them.

Importing this package installs the broker from the process's settings, so the actors below
bind to it, and gives the broker the process's ``Services`` (built lazily, once).
"""

from pipeline.broker import install_broker
from pipeline.config import get_settings
from pipeline.observability.logs import configure_logging
from pipeline.services import Services

configure_logging(get_settings(), role="worker")  # no-op in the web process, which configured first
broker = install_broker(get_settings())
broker.services = Services(get_settings())

from pipeline.actors import access, consolidate, embed, enrich, persist, relations, similarity, vectors  # noqa: E402,I001  (actors bind to the broker above)

__all__ = ["access", "broker", "consolidate", "embed", "enrich", "persist", "relations", "similarity", "vectors"]
