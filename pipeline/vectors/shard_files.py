"""Small JSON files mempipe keeps inside an Edge shard's directory, beside Qdrant's own.

They travel with the shard (an index build copies the directory, a backup takes it whole).
A file that is missing or unreadable reads as empty: each reader has its default for that.
"""

from __future__ import annotations

import json
import os
from typing import Any


def read(shard_path: str, name: str) -> dict[str, Any]:
    try:
        with open(os.path.join(shard_path, name), encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write(shard_path: str, name: str, data: dict[str, Any]) -> None:
    """Replace the file whole (written beside it, then renamed), so a crash never leaves half of it."""
    target = os.path.join(shard_path, name)
    with open(target + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    os.replace(target + ".tmp", target)
