"""How an actor reaches its process's services: through the broker it runs on."""

from __future__ import annotations

import dramatiq

from pipeline.services import Services


def services() -> Services:
    return dramatiq.get_broker().services
