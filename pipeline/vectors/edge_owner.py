"""The Edge shard's owner, announced in the broker, so that a second host cannot split the index.

``pipeline.vectors.shard_lock`` stops a second process on the same machine. A process on another
machine (a worker given the ``vectors`` queue, a second web host) opens a shard of its own
in its own data directory and quietly starts a second, partial index. Every process that
opens an Edge collection shares the broker, so the owner keeps a record there,
``mempipe:edge-owner:<collection>`` = its host, shard path and pid, with a short expiry it
refreshes from a daemon thread. A process that finds a live record naming another host or
another shard path refuses, naming the owner.

The same host and path may always take the record over: it holds the shard's file lock, so
the record's writer is gone (a crash leaves its record until the expiry, a clean close
deletes it). Without the broker the record is skipped with a warning: the file lock still
guards the machine, and a broker outage must not stop the web process serving recall.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from datetime import datetime, timezone

import redis

from pipeline.vectors.shard_generations import stable_path
from pipeline.vectors.shard_lock import ShardInUse

log = logging.getLogger(__name__)

KEY = "mempipe:edge-owner:{collection}"
TTL_S = 30
REFRESH_S = 10


def _message(collection: str, owner: dict) -> str:
    return (f"the Qdrant Edge collection {collection!r} is already owned by pid {owner.get('pid')} on host "
            f"{owner.get('host')} (shard {owner.get('path')}), since {owner.get('since')}: a second owner would "
            "build a second, partial index. An Edge shard has exactly one owner: run a single web process and keep "
            "the vectors and similarity queues off every other process, or set QDRANT_URL to a Qdrant server to "
            f"run several web processes or hosts. A crashed owner's claim expires within {TTL_S} s.")


class OwnerRecord:
    """This process's claim on one Edge collection, kept alive until ``release``."""

    def __init__(self, broker: redis.Redis, collection: str, shard_path: str):
        self._broker = broker
        self._collection = collection
        self._key = KEY.format(collection=collection)
        self._me = {"host": socket.gethostname(), "path": stable_path(shard_path), "pid": os.getpid(),
                    "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _ours(self, owner: dict) -> bool:
        return (owner.get("host"), owner.get("path")) == (self._me["host"], self._me["path"])

    def claim(self) -> None:
        """Take the record, or raise ``ShardInUse`` naming the live owner elsewhere."""
        value = json.dumps(self._me)
        try:
            if not self._broker.set(self._key, value, nx=True, ex=TTL_S):
                raw = self._broker.get(self._key)
                owner = json.loads(raw) if raw else {}
                if owner and not self._ours(owner):
                    raise ShardInUse(_message(self._collection, owner))
                self._broker.set(self._key, value, ex=TTL_S)
        except redis.RedisError as exc:
            log.warning("Edge owner record not kept (broker unreachable: %s); the shard's file lock still "
                        "guards this machine", exc)
        self._thread = threading.Thread(target=self._refresh, name=f"edge-owner-{self._collection}", daemon=True)
        self._thread.start()

    def _refresh(self) -> None:
        value = json.dumps(self._me)
        while not self._stop.wait(REFRESH_S):
            try:
                raw = self._broker.get(self._key)
                if raw is None or self._ours(json.loads(raw)):
                    self._broker.set(self._key, value, ex=TTL_S)
                else:  # another owner took over after our claim lapsed: say so, loudly
                    log.error("Edge collection %s is now claimed by another process: %s", self._collection, raw)
            except (redis.RedisError, ValueError) as exc:
                log.warning("Edge owner record not refreshed: %s", exc)

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        try:
            raw = self._broker.get(self._key)
            if raw is not None and self._ours(json.loads(raw)):
                self._broker.delete(self._key)
        except (redis.RedisError, ValueError):
            pass  # it expires on its own
