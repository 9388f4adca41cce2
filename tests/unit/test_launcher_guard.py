"""The one-command launcher refuses to expose the API without a token, before starting anything."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ops.redis_servers import free_port, port_open
from ops.serve import public_bind_refusal
from pipeline.config import Settings, is_loopback
from ops.bench.stack import ROOT


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "LOCALHOST", "::1", "[::1]"])
def test_loopback_hosts(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "10.0.0.5", "192.168.1.20", "example.com", "127.0.0.1.nip.io"])
def test_public_hosts(host):
    assert not is_loopback(host)


def test_refusal_only_for_a_public_host_without_a_token():
    assert public_bind_refusal(Settings(host="127.0.0.1", automem_api_token=None)) is None
    assert public_bind_refusal(Settings(host="0.0.0.0", automem_api_token="chosen")) is None


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3"])
def test_launcher_refuses_public_host_without_token(tmp_path, host):
    broker_port, graph_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("AUTOMEM_API_TOKEN", "ADMIN_API_TOKEN")}
    env.update(HOST=host, MEMPIPE_DATA_DIR=str(tmp_path / "data"), REDIS_URL=f"redis://127.0.0.1:{broker_port}/0",
               FALKORDB_PORT=str(graph_port))
    done = subprocess.run([sys.executable, "-m", "ops.serve"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done
    assert "refusing to start" in done.stderr and "AUTOMEM_API_TOKEN" in done.stderr, done.stderr
    # Refused before anything started: no data dir, no token file, no redis-server listening.
    assert not (tmp_path / "data").exists()
    assert not port_open("127.0.0.1", broker_port) and not port_open("127.0.0.1", graph_port)
