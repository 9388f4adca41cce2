"""Restore a backup archive (``pipeline.backup``'s) into the given stores.

Streams the archive a batch at a time. Nodes are merged by id (properties replaced), edges
merged by (from, type, to). Vectors are upserted from the Qdrant part; when the archive holds
only the graph, every memory is re-embedded with the configured provider instead.
"""

from __future__ import annotations

import gzip
import re
import tarfile
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator

import orjson

from pipeline.backup import FORMAT
from pipeline.embedding import Embedder
from pipeline.graph import GraphStore
from pipeline.labelled import embed_contents
from pipeline.maintenance import graph_ops
from pipeline.vectors import VectorPoint, VectorStore, vector_payload

BATCH = 500
# Relationship types cannot be Cypher parameters; a type from an archive is only ever used
# after it matches this, so a crafted archive cannot inject Cypher.
_REL_TYPE = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")


def _lines(tar: tarfile.TarFile, member: tarfile.TarInfo) -> Iterator[dict[str, Any]]:
    with gzip.open(tar.extractfile(member), "rb") as stream:
        header = orjson.loads(stream.readline())
        if header.get("format") != FORMAT:
            raise ValueError(f"{member.name}: not a mempipe backup part")
        for line in stream:
            if line.strip():
                yield orjson.loads(line)


def _members(tar: tarfile.TarFile) -> dict[str, tarfile.TarInfo]:
    found = {}
    for member in tar.getmembers():
        part = member.name.split("/", 1)[0]
        if member.isfile() and part in ("falkordb", "qdrant") and member.name.endswith(".json.gz"):
            found[part] = member
    return found


def wipe(graph: GraphStore, vectors: VectorStore) -> None:
    while graph.run_write("MATCH (m:Memory) WITH m LIMIT 5000 DETACH DELETE m RETURN count(m)")[0][0]:
        pass
    while True:
        records, _ = vectors.scroll(None, 1000)
        if not records:
            return
        vectors.delete([r.memory_id for r in records])


def _flush_nodes(graph: GraphStore, nodes: list[dict[str, Any]]) -> None:
    graph.run_write("UNWIND $rows AS row MERGE (m:Memory {id: row.id}) SET m = row", {"rows": nodes})


def _flush_edges(graph: GraphStore, edges: dict[str, list[dict[str, Any]]]) -> None:
    for kind, rows in edges.items():
        if not _REL_TYPE.match(kind):
            raise ValueError(f"refusing relationship type {kind!r} from the archive")
        graph.run_write(
            "UNWIND $rows AS row MATCH (a:Memory {id: row.a}) MATCH (b:Memory {id: row.b}) "
            f"MERGE (a)-[r:{kind}]->(b) SET r = row.props",
            {"rows": rows},
        )


def restore_graph(graph: GraphStore, lines: Iterator[dict[str, Any]]) -> dict[str, int]:
    nodes: list[dict[str, Any]] = []
    edges: dict[str, list[dict[str, Any]]] = defaultdict(list)
    counts = {"nodes": 0, "edges": 0}
    pending_edges = 0
    for line in lines:
        if "node" in line:
            nodes.append(line["node"])
            counts["nodes"] += 1
            if len(nodes) >= BATCH:
                _flush_nodes(graph, nodes)
                nodes = []
        elif "edge" in line:
            e = line["edge"]
            # The export writes every node before any edge; flush what is left so both ends exist.
            if nodes:
                _flush_nodes(graph, nodes)
                nodes = []
            edges[e["type"]].append({"a": e["from"], "b": e["to"], "props": e.get("props") or {}})
            counts["edges"] += 1
            pending_edges += 1
            if pending_edges >= BATCH:
                _flush_edges(graph, edges)
                edges, pending_edges = defaultdict(list), 0
    if nodes:
        _flush_nodes(graph, nodes)
    if pending_edges:
        _flush_edges(graph, edges)
    return counts


def restore_vectors(vectors: VectorStore, lines: Iterator[dict[str, Any]]) -> int:
    batch: list[VectorPoint] = []
    count = 0
    for line in lines:
        point = line["point"]
        batch.append(VectorPoint(point["memory_id"], point["vector"], point["payload"]))
        if len(batch) >= BATCH:
            vectors.upsert(batch)
            count, batch = count + len(batch), []
    if batch:
        vectors.upsert(batch)
        count += len(batch)
    return count


def reembed_all(graph: GraphStore, vectors: VectorStore, embedder: Embedder, batch: int = 64, *, labelled: bool = True) -> int:
    cursor, count = None, 0
    while True:
        memories, cursor = graph_ops.page_memories(graph, cursor, batch)
        if memories:
            # as the embed stage does, so a restored store ranks like the one it came from
            embedded = embed_contents(embedder, [m["content"] for m in memories], labelled=labelled)
            vectors.upsert([VectorPoint(m["id"], v, vector_payload(m)) for m, v in zip(memories, embedded)])
            count += len(memories)
        if cursor is None:
            return count


def restore(archive: Path, graph: GraphStore, vectors: VectorStore, embedder_factory, *, wipe_first: bool = False,
            labelled: bool = True) -> dict[str, Any]:
    with tarfile.open(archive, "r:gz") as tar:
        parts = _members(tar)
        if "falkordb" not in parts:
            raise ValueError(f"{archive}: no falkordb/ part; nothing to restore the record from")
        if wipe_first:
            wipe(graph, vectors)
        report: dict[str, Any] = restore_graph(graph, _lines(tar, parts["falkordb"]))
        if "qdrant" in parts:
            report["vectors"] = restore_vectors(vectors, _lines(tar, parts["qdrant"]))
        else:
            report["reembedded"] = reembed_all(graph, vectors, embedder_factory(), labelled=labelled)
    vectors.maintain()
    vectors.finish_build()  # with EDGE_BUILD_IN_CHILD the build runs in a child: done before the report
    return report
