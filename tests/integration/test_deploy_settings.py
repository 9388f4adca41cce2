"""Settings that platform deployments rely on, against the real FalkorDB."""

from __future__ import annotations

import uuid

import pytest

from pipeline.config import Settings
from pipeline.graph import GraphStore

pytestmark = pytest.mark.integration


def test_falkordb_url_overrides_host_and_port(servers):
    # Host and port point nowhere; only the URL (as an add-on sets it) is right.
    settings = Settings(falkordb_url=f"redis://127.0.0.1:{servers.graph.port}", falkordb_host="203.0.113.1",
                        falkordb_port=1, falkordb_graph=f"url_{uuid.uuid4().hex[:8]}")
    store = GraphStore.connect(settings)
    store.ensure_schema()
    assert store.count_memories(frozenset()) == 0
