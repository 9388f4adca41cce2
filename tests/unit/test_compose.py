"""docker-compose.yml: the scaled deployment's shape, and `docker compose config` where a CLI exists.

The structural checks always run (PyYAML only), so a machine without Docker still catches a
missing service, health check or volume; the CLI check validates the file against the Compose
specification itself with whichever Compose is installed (v2 plugin or v1).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from pipeline.config import Settings

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
STORES = {"redis": "redis", "falkordb": "falkordb/falkordb", "qdrant": "qdrant/qdrant"}  # service → publisher's image
APP_SERVICES = {"web", "worker", "clock"}
DATA_PATHS = {"redis": "/data", "falkordb": "/var/lib/falkordb/data", "qdrant": "/qdrant/storage"}
TOKENS = {"AUTOMEM_API_TOKEN": "compose-test-token", "ADMIN_API_TOKEN": "compose-test-admin"}


def _compose() -> dict:
    return yaml.safe_load(COMPOSE_FILE.read_text())


def _services() -> dict:
    return _compose()["services"]


def test_services_are_the_three_stores_and_the_three_process_types():
    assert set(_services()) == set(STORES) | APP_SERVICES


def test_stores_use_their_publishers_images_with_persistent_named_volumes():
    compose = _compose()
    for name, image in STORES.items():
        service = compose["services"][name]
        assert service["image"].split(":")[0] == image, f"{name}: {service['image']}"
        mounts = {m.split(":")[1]: m.split(":")[0] for m in service["volumes"]}
        volume = mounts.get(DATA_PATHS[name])
        assert volume in compose["volumes"], f"{name}: its data path {DATA_PATHS[name]} is not on a named volume"
    redis_command = " ".join(compose["services"]["redis"]["command"])
    assert "--appendonly yes" in redis_command  # queued writes survive a broker restart
    assert "--appendonly yes" in compose["services"]["falkordb"]["environment"]["REDIS_ARGS"]


def test_every_long_running_service_but_the_clock_has_a_health_check():
    services = _services()
    for name in set(STORES) | {"web", "worker"}:
        check = services[name].get("healthcheck", {})
        assert check.get("test") and check["test"][0] in ("CMD", "CMD-SHELL"), f"{name} has no health check"
    assert "/health" in " ".join(services["web"]["healthcheck"]["test"])
    worker_check = " ".join(services["worker"]["healthcheck"]["test"])
    assert f":{Settings.model_fields['worker_metrics_port'].default}/metrics" in worker_check


def test_app_services_wait_for_healthy_stores_and_restart():
    for name in APP_SERVICES:
        service = _services()[name]
        assert service["build"] == "."
        assert {store: dep["condition"] for store, dep in service["depends_on"].items()} == {s: "service_healthy" for s in STORES}
        assert service.get("restart") == "unless-stopped", name


def test_worker_can_scale_and_every_app_variable_is_a_setting():
    worker = _services()["worker"]
    # --scale worker=N needs replicas without a fixed name or host port
    assert "container_name" not in worker and "ports" not in worker
    settings = {(field.alias or name).upper() for name, field in Settings.model_fields.items()}
    for name in APP_SERVICES:
        env = _services()[name]["environment"]
        assert set(env) <= settings, f"{name} sets variables no setting reads: {set(env) - settings}"
        assert env["QDRANT_URL"] and env["REDIS_URL"] != f"redis://{env['FALKORDB_HOST']}:{env['FALKORDB_PORT']}/0"


def _compose_cli() -> list[str] | None:
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy else None


@pytest.mark.skipif(_compose_cli() is None, reason="no Docker Compose CLI on this machine (the structural tests above still ran)")
def test_docker_compose_config_accepts_the_file_and_demands_the_tokens():
    cli = _compose_cli()
    base = [*cli, "--project-directory", str(ROOT), "-f", str(COMPOSE_FILE)]
    env = {k: v for k, v in os.environ.items() if k not in TOKENS}
    resolved = subprocess.run([*base, "config"], env={**env, **TOKENS}, capture_output=True, text=True, timeout=60)
    assert resolved.returncode == 0, resolved.stderr
    rendered = yaml.safe_load(resolved.stdout)
    assert set(rendered["services"]) == set(STORES) | APP_SERVICES
    assert rendered["services"]["worker"]["environment"]["AUTOMEM_API_TOKEN"] == TOKENS["AUTOMEM_API_TOKEN"]
    # Without the tokens it refuses to render (and `up` to start), naming the variable.
    refused = subprocess.run([*base, "config"], env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "AUTOMEM_API_TOKEN" in refused.stderr + refused.stdout
