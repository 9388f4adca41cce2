"""Backups: a ``.tar.gz`` holding a FalkorDB export and a Qdrant export, written page by page.

Layout (AutoMem's names): ``falkordb/falkordb_<ts>.json.gz`` and ``qdrant/qdrant_<ts>.json.gz``.
Each is gzip'd JSON Lines — one header line, then one record per line — so writing and
restoring both stream, and no store is ever held in memory at once:

- falkordb: ``{"node": {...all properties...}}`` and ``{"edge": {"from", "to", "type", "props"}}``
- qdrant:   ``{"point": {"memory_id", "vector", "payload"}}``

GET /backup (admin) serves the archive and ``python -m ops.backup`` writes one from the command
line; ``pipeline.restore`` (``python -m ops.restore``) reads it back.
"""

from __future__ import annotations

import gzip
import tarfile
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator

import orjson

from pipeline.graph import GraphStore
from pipeline.maintenance import graph_ops
from pipeline.vectors import VectorStore

FORMAT = "mempipe-backup"
VERSION = 1
PARTS = ("falkordb", "qdrant")
PAGE = 1000


PROPERTIES_QUERY = (
    "MATCH (m:Memory) WHERE id(m) > $after AND id(m) <= $upper "
    "RETURN id(m), properties(m) ORDER BY id(m) LIMIT $limit"
)


def _pages_of_ids(graph: GraphStore, page: int) -> Iterator[list[dict[str, Any]]]:
    """Every Memory node's properties, a page at a time (keyset paging, see graph_ops)."""
    cursor = None
    while True:
        rows, cursor = graph_ops.walk(graph, PROPERTIES_QUERY, cursor, page)
        if rows:
            yield [dict(props) for props in rows]
        if cursor is None:
            return


def export_graph(graph: GraphStore, page: int = PAGE) -> Iterator[dict[str, Any]]:
    """Every Memory node with all its properties; then, in a second pass, every edge between them.

    Nodes first, so a restore has both ends of every edge before it writes any edge.
    """
    for nodes in _pages_of_ids(graph, page):
        for props in nodes:
            yield {"node": props}
    for nodes in _pages_of_ids(graph, page):
        edges = graph.run_read(
            "UNWIND $ids AS id MATCH (a:Memory {id: id})-[r]->(b:Memory) RETURN a.id, type(r), properties(r), b.id",
            {"ids": [n["id"] for n in nodes]},
        )
        for source, kind, props, target in edges:
            yield {"edge": {"from": source, "to": target, "type": kind, "props": dict(props)}}


def export_vectors(vectors: VectorStore, page: int = PAGE) -> Iterator[dict[str, Any]]:
    offset = None
    while True:
        records, offset = vectors.scroll(offset, page, with_vectors=True)
        for record in records:
            yield {"point": {"memory_id": record.memory_id, "vector": record.vector, "payload": record.payload}}
        if offset is None:
            return


def _write_part(path: Path, header: dict[str, Any], lines: Iterable[dict[str, Any]]) -> int:
    count = 0
    with gzip.open(path, "wb", compresslevel=6) as out:
        out.write(orjson.dumps(header) + b"\n")
        for line in lines:
            out.write(orjson.dumps(line) + b"\n")
            count += 1
    return count


def write_backup(
    destination: Path, graph: GraphStore | None, vectors: VectorStore | None, include: Iterable[str] = PARTS
) -> dict[str, int]:
    """Write the archive to ``destination``; returns records written per part."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    written: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="mempipe-backup-") as scratch, tarfile.open(destination, "w:gz") as tar:
        for part in include:
            path = Path(scratch) / f"{part}_{stamp}.json.gz"
            header = {"format": FORMAT, "version": VERSION, "part": part, "created_at": stamp}
            if part == "falkordb":
                written[part] = _write_part(path, header, export_graph(graph))
            else:
                written[part] = _write_part(path, header, export_vectors(vectors))
            tar.add(path, arcname=f"{part}/{path.name}")
            path.unlink()
    return written


def parse_include(value: str | None) -> list[str]:
    from pipeline.errors import ValidationError

    parts = [p.strip().lower() for p in (value or ",".join(PARTS)).split(",") if p.strip()]
    unknown = [p for p in parts if p not in PARTS]
    if unknown or not parts:
        raise ValidationError(f"include: expected a comma list of {', '.join(PARTS)}, got {value!r}")
    return list(dict.fromkeys(parts))
