"""Directories that say which they are: a shard's stand-in for the tests of what a start keeps,
moves and removes (pipeline.vectors.edge_swap, pipeline.vectors.shard_generations)."""

from __future__ import annotations

import os


def marked_dir(path: str, marker: str) -> str:
    """Create ``path`` holding a file that names it ``marker``; returns ``path``."""
    os.makedirs(path)
    with open(os.path.join(path, "which"), "w") as handle:
        handle.write(marker)
    return path


def marker(path: str) -> str:
    """What ``marked_dir`` named the directory at ``path`` (through a link too)."""
    with open(os.path.join(path, "which")) as handle:
        return handle.read()
