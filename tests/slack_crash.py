"""A web process that dies while applying a Slack event, for the event-claim test.

The real app, except that while the file named by ``MEMPIPE_TEST_SLACK_CRASH`` exists, the
process exits on the spot (``os._exit``: no cleanup, as a kill or a power cut) when the
Slack endpoint is about to queue its write. Whatever the endpoint did before that point is
what survives the crash.

    uvicorn tests.slack_crash:create_crashing_app --factory
"""

from __future__ import annotations

import os
from pathlib import Path

from fastapi import FastAPI

from api.app import create_app
from api.writes import WritePath


def create_crashing_app() -> FastAPI:
    switch = Path(os.environ["MEMPIPE_TEST_SLACK_CRASH"])
    queue = WritePath.store_many

    async def store_many_or_die(self, records):
        if switch.exists():
            os._exit(17)
        return await queue(self, records)

    WritePath.store_many = store_many_or_die
    return create_app()
