"""Keyword search inside the Qdrant Edge shard: BM25 over a scored text index on ``content``.

Why here and not FalkorDB's full-text index: the graph route reads hundreds of matches (id,
content) over the socket and ranks them in Python, which at scale dominates recall's cost
(docs/benchmarks-log.md, issue 7/3). Edge keeps, per point, the stemmed terms
and the document's length, and ranks by BM25 itself (``TextQuery``), with the same scope
filter as the dense search: one in-process call that returns only the best few.

The index tokenises as the engine's own BM25 does (``pipeline.query.lexical.tokens``): lower
case, words of two letters or more, the engine's stop words, Snowball English stems.

Migration. Points written before this layout keep ``content`` inside the packed payload
document, where no index sees it. A shard that lacks the marker file below is therefore
rewritten once (every point's payload repacked, ``content`` native) by the maintenance
thread; until the marker is written, keyword search uses the graph's full-text index. Each
rewritten point leaves its indexed segment (Qdrant moves a point on any update), so an index
build follows the migration.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from pipeline.vectors import shard_files
from pipeline.vectors.edge_payload import unpack_payload

TEXT_FIELD = "content"
MARKER = "mempipe_text_index.json"
# Bump when the index parameters change: the index is then built again (delete + create).
VERSION = 1


def text_index_params(qe, memory) -> Any:
    from pipeline.query.keywords import STOP_WORDS  # here: pipeline.query imports the vector stores

    return qe.TextIndexParams(
        tokenizer=qe.TokenizerType.Word,
        lowercase=True,
        min_token_len=2,
        stopwords=qe.StopwordsSet(custom=set(STOP_WORDS)),
        stemmer=qe.SnowballParams(qe.SnowballLanguage.English),
        scoring=True,
        # Only TextQuery reads this index, never a dense search filtered by text: no extra HNSW
        # links per frequent word at index builds.
        enable_hnsw=False,
        memory=memory,  # EDGE_PAYLOAD_INDEXES_ON_DISK
    )


def marker_version(path: str) -> int:
    """The layout version the shard at ``path`` was brought to (0: never)."""
    try:
        return int(shard_files.read(path, MARKER).get("version") or 0)
    except (TypeError, ValueError):
        return 0


def write_marker(path: str) -> None:
    shard_files.write(path, MARKER, {"version": VERSION, "field": TEXT_FIELD})


def ensure_index(shard, qe, memory, rebuild: bool) -> None:
    """Create the scored text index (idempotent); ``rebuild`` drops an older one first."""
    if rebuild:
        try:
            shard.update(qe.UpdateOperation.delete_field_index(TEXT_FIELD))
        except Exception:  # no index yet: nothing to drop
            pass
    shard.update(qe.UpdateOperation.create_field_index(TEXT_FIELD, text_index_params(qe, memory)))


def backfill(shard, qe, pack: Callable[[dict[str, Any]], dict[str, Any]], lock: threading.Lock,
             page: int = 1000) -> int:
    """Repack every point whose ``content`` is not native yet; returns how many were rewritten.

    Each page is read and written under ``lock`` (the store's payload lock), so a payload
    update of the same point cannot land between this read and this write and be lost.
    """
    offset, rewritten = None, 0
    while True:
        with lock:
            records, offset = shard.scroll(qe.ScrollRequest(offset=offset, limit=page, with_payload=True,
                                                            with_vector=False))
            for record in records:
                raw = record.payload or {}
                if TEXT_FIELD in raw:
                    continue
                payload = unpack_payload(raw)
                if TEXT_FIELD not in payload:
                    continue
                # set_payload replaces the keys it names: the document without content, content native
                shard.update(qe.UpdateOperation.set_payload([record.id], pack(payload)))
                rewritten += 1
        if offset is None:
            return rewritten
