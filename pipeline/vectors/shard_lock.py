"""One owner per Qdrant Edge shard, enforced with an exclusive lock beside the shard.

An Edge shard lives inside the process that opened it: a second process opening the same
directory (a second web process, a worker told to consume the ``vectors`` queue) either fails
inside qdrant_edge with an OS error that names nothing, or writes its own copy and splits
the index. The owner takes ``<shard>.lock`` with ``flock`` before opening the shard and keeps
it until the shard is closed; anyone else gets ``ShardInUse`` naming the holder and what to
do instead. The kernel drops the lock when the owner exits, however it exits, so a crash
never leaves a stale lock behind.

Within one process the lock is shared (reference-counted): the process is the owner, and
re-opening a shard it closed, or a second handle on it, is qdrant_edge's business.
"""

from __future__ import annotations

import fcntl
import os
import socket
import threading
from datetime import datetime, timezone
from pathlib import Path

from pipeline.errors import ConfigurationError
from pipeline.vectors.shard_generations import stable_path


class ShardInUse(ConfigurationError):
    """Another process owns this Edge shard."""


_held: dict[str, list[int]] = {}  # lock path -> [fd, holders in this process]
_guard = threading.Lock()


def _lock_path(shard_path: str) -> str:
    # not through the shard's own link: it points at another directory after each swap
    return stable_path(shard_path) + ".lock"


def _message(shard_path: str, holder: str) -> str:
    return (f"the Qdrant Edge shard {shard_path} is already open in another process ({holder or 'owner unknown'}). "
            "An Edge shard has exactly one owner: run a single web process (it consumes the vectors and "
            "similarity queues itself) and start workers without those queues (dramatiq ... -Q persist embed "
            "enrich maintenance), or set QDRANT_URL to a Qdrant server to run several web processes or hosts.")


def acquire(shard_path: str) -> None:
    """Take the shard's lock for this process, or raise ``ShardInUse`` naming the holder."""
    path = _lock_path(shard_path)
    with _guard:
        if path in _held:
            _held[path][1] += 1
            return
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 512, 0).decode(errors="replace").strip()
            os.close(fd)
            raise ShardInUse(_message(shard_path, holder)) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()} since {stamp}\n".encode(), 0)
        _held[path] = [fd, 1]


def release(shard_path: str) -> None:
    """Give back one hold; the last one unlocks (closing the descriptor drops the flock)."""
    path = _lock_path(shard_path)
    with _guard:
        entry = _held.get(path)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] <= 0:
            del _held[path]
            os.close(entry[0])
