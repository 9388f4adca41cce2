"""app.json agrees with the Procfile and with the settings object."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.config import Settings

ROOT = Path(__file__).resolve().parents[2]
PLATFORM_VARS = {"HF_HUB_OFFLINE", "WORKER_PROCESSES", "WORKER_THREADS"}  # read by the Procfile or libraries


def setting_names() -> set[str]:
    return {(field.alias or name).upper() for name, field in Settings.model_fields.items()}


def test_manifest_env_names_settings_that_exist():
    manifest = json.loads((ROOT / "app.json").read_text())
    unknown = set(manifest["env"]) - setting_names() - PLATFORM_VARS
    assert not unknown, f"app.json sets variables no setting reads: {unknown}"
    assert manifest["env"]["AUTOMEM_API_TOKEN"]["generator"] == "secret"
    assert manifest["env"]["ADMIN_API_TOKEN"]["generator"] == "secret"


def test_manifest_formation_matches_procfile():
    manifest = json.loads((ROOT / "app.json").read_text())
    procfile = (ROOT / "Procfile").read_text().splitlines()
    process_types = {line.split(":", 1)[0] for line in procfile if line.strip() and not line.startswith("#")}
    assert set(manifest["formation"]) == process_types
    for variable in PLATFORM_VARS - {"HF_HUB_OFFLINE"}:
        assert f"${{{variable}" in (ROOT / "Procfile").read_text()


def test_manifest_settings_parse():
    manifest = json.loads((ROOT / "app.json").read_text())
    values = {k.lower(): v["value"] for k, v in manifest["env"].items() if "value" in v and k not in PLATFORM_VARS}
    settings = Settings(**values, automem_api_token="t", falkordb_url="redis://x:1", qdrant_url="http://q:6333")
    assert settings.worker_metrics_port == 0 and settings.log_format == "json" and not settings.uses_qdrant_edge
