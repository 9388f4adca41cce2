"""What an Edge shard's segments say about themselves, read from their files (for tests)."""

from __future__ import annotations

import glob
import json
import os
from typing import Any


def segments(path: str) -> list[tuple[str, dict[str, Any]]]:
    """Each segment's directory and the configuration in its ``segment.json``."""
    found = []
    for config_file in sorted(glob.glob(f"{path}/segments/*/segment.json")):
        with open(config_file) as handle:
            found.append((os.path.dirname(config_file), json.load(handle)["config"]))
    return found


def built(path: str) -> list[tuple[str, dict[str, Any]]]:
    """The built (HNSW-indexed, graph or codes-only) segments: directory and dense vector config."""
    return [(directory, config["vector_data"][""]) for directory, config in segments(path)
            if config["vector_data"][""]["index"]["type"] == "hnsw"]


def has_codes(segment_dir: str) -> bool:
    """Does the segment hold int8 codes of its vectors?"""
    return os.path.exists(os.path.join(segment_dir, "vector_storage", "quantized.data"))


def payload_indexes_on_disk(segment_dir: str) -> dict[str, bool]:
    """Each indexed field's main index in the segment: memory-mapped (True) or held in the heap."""
    with open(os.path.join(segment_dir, "payload_index", "config.json")) as handle:
        indexed = json.load(handle)["indexed_types"]
    found = {}
    for field, indexes in indexed.items():
        main = next(i for i in indexes if i["index_type"] != "null_index")
        storage = main["storage_type"]
        found[field] = isinstance(storage, dict) and storage.get("mmap", {}).get("is_on_disk") is True
    return found
