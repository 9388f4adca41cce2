"""FalkorDB: the canonical record of every memory.

Every query here is parameterised: user input only ever reaches FalkorDB as a parameter,
never spliced into Cypher text. Writes are batched (one ``UNWIND`` per call).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Iterable

import orjson
from falkordb import FalkorDB
from redis.exceptions import ResponseError

from pipeline.config import Settings
from pipeline.errors import Unavailable, ValidationError
from pipeline.limits import BACKGROUND_QUERY_TIMEOUT_MS
from pipeline.records import MemoryRecord, tag_prefixes
from pipeline.threads import SCHEMA as thread_schema
from pipeline.threads import link_threads

# Node properties that are stored as-is; metadata is stored JSON-encoded because FalkorDB
# properties cannot hold maps.
_PLAIN_FIELDS = (
    "content", "tags", "importance", "confidence", "type", "type_source", "timestamp",
    "updated_at", "t_valid", "t_invalid",
    # written by enrichment; carried into the vector payload so recall sees them on vector hits
    "summary", "duplicate_of",
)


def _epoch(value: str | None) -> float | None:
    return datetime.fromisoformat(value).timestamp() if value else None


def node_properties(fields: dict[str, Any]) -> dict[str, Any]:
    """Turn record fields (or a subset, for a patch) into node properties."""
    props = {name: fields[name] for name in _PLAIN_FIELDS if name in fields}
    if "tags" in fields:
        props["tag_prefixes"] = tag_prefixes(fields["tags"])
    if "metadata" in fields:
        props["metadata_json"] = orjson.dumps(fields["metadata"] or {}).decode()
        props["metadata_text"] = metadata_search_text(fields["metadata"] or {})
    if "timestamp" in fields:
        props["timestamp_epoch"] = _epoch(fields["timestamp"])
    if "updated_at" in fields:
        props["updated_epoch"] = _epoch(fields["updated_at"])
    return props


CONTENT_FULLTEXT_CREATE = "CALL db.idx.fulltext.createNodeIndex('Memory', 'content')"

# Metadata values longer than this are prose, not identifiers: the sidecar does not index them.
_METADATA_VALUE_MAX_CHARS = 120
_METADATA_TEXT_MAX_CHARS = 2000


def metadata_search_text(metadata: dict[str, Any]) -> str:
    """The short string values of metadata (two levels deep), one per line.

    This is what the metadata sidecar's full-text index sees: identifier-like values such as
    a project, a speaker, a file or an entity name — never long prose, which the content
    index already covers.
    """
    values: list[str] = []

    def visit(value: Any, depth: int) -> None:
        if isinstance(value, str):
            if 0 < len(value) <= _METADATA_VALUE_MAX_CHARS:
                values.append(value)
        elif isinstance(value, list) and depth <= 2:
            for item in value:
                visit(item, depth + 1)
        elif isinstance(value, dict) and depth <= 1:
            for item in value.values():
                visit(item, depth + 1)

    visit(metadata, 0)
    return "\n".join(dict.fromkeys(values))[:_METADATA_TEXT_MAX_CHARS]


_STORAGE_ONLY = ("metadata_json", "metadata_text", "timestamp_epoch", "updated_epoch", "arrival")


def memory_from_node(props: dict[str, Any]) -> dict[str, Any]:
    """Node properties → the memory object the API returns."""
    memory = {k: v for k, v in props.items() if k not in _STORAGE_ONLY}
    memory["metadata"] = orjson.loads(props["metadata_json"]) if props.get("metadata_json") else {}
    return memory


# What recall reads of a memory node, as one list per row. Projecting named properties costs
# less than returning the node itself.
MEMORY_COLUMNS = (
    "id", "content", "tags", "tag_prefixes", "importance", "confidence", "type", "timestamp", "updated_at",
    "t_valid", "t_invalid", "metadata_json", "archived", "last_accessed", "relevance_score",
)


def memory_projection(var: str) -> str:
    """A Cypher list expression of ``MEMORY_COLUMNS`` for node variable ``var`` (a fixed name)."""
    return "[" + ", ".join(f"{var}.{column}" for column in MEMORY_COLUMNS) + "]"


def memory_from_row(values: list[Any]) -> dict[str, Any]:
    return memory_from_node({c: v for c, v in zip(MEMORY_COLUMNS, values) if v is not None})


@dataclass(frozen=True)
class TagFilter:
    """Tag scope of a query, as the spec defines it (prefix match via tag_prefixes)."""

    tags: tuple[str, ...] = ()
    mode: str = "any"  # any | all
    match: str = "prefix"  # prefix | exact

    @property
    def active(self) -> bool:
        return bool(self.tags)

    @property
    def lowered(self) -> list[str]:
        return [t.lower() for t in self.tags]


@dataclass(frozen=True)
class Scope:
    """The hard filters a candidate search applies inside the store (graph or vectors).

    ``exclude_tags`` are matched against ``tag_prefixes``, so excluding ``temp`` removes
    ``temp`` and ``temp:draft`` alike (exact and prefix at once, as the spec asks).
    """

    tags: TagFilter = TagFilter()
    exclude_tags: tuple[str, ...] = ()
    start_epoch: float | None = None
    end_epoch: float | None = None
    excluded_types: frozenset[str] = frozenset()

    @property
    def excluded_lowered(self) -> list[str]:
        return [t.lower() for t in self.exclude_tags]

    def without_tags(self) -> "Scope":
        return Scope(TagFilter(), self.exclude_tags, self.start_epoch, self.end_epoch, self.excluded_types)


def tag_predicate(tag_filter: TagFilter) -> str:
    """A WHERE fragment over node ``m`` for a tag scope; the tags travel as ``$scope_tags``."""
    field = "m.tag_prefixes" if tag_filter.match == "prefix" else "[t IN m.tags | toLower(t)]"
    quantifier = "all" if tag_filter.mode == "all" else "any"
    return f"{quantifier}(s IN $scope_tags WHERE s IN {field})"


def _scope_predicate(scope: Scope) -> tuple[str, dict[str, Any]]:
    """A WHERE fragment over node ``m`` and its parameters; values only ever travel as parameters."""
    clauses = ["NOT coalesce(m.type, '') IN $excluded_types", "NOT coalesce(m.archived, false)"]
    params: dict[str, Any] = {"excluded_types": sorted(scope.excluded_types)}
    if scope.tags.active:
        clauses.append(tag_predicate(scope.tags))
        params["scope_tags"] = scope.tags.lowered
    if scope.exclude_tags:
        clauses.append("NOT any(x IN $exclude_tags WHERE x IN coalesce(m.tag_prefixes, []))")
        params["exclude_tags"] = scope.excluded_lowered
    if scope.start_epoch is not None:
        clauses.append("m.timestamp_epoch >= $start_epoch")
        params["start_epoch"] = scope.start_epoch
    if scope.end_epoch is not None:
        clauses.append("m.timestamp_epoch <= $end_epoch")
        params["end_epoch"] = scope.end_epoch
    return " AND ".join(clauses), params


# Orderings trending may use; the key picks a fixed Cypher fragment, never user text.
TRENDING_ORDERS = {
    "importance": "m.importance DESC, m.timestamp_epoch DESC",
    "time_desc": "coalesce(m.updated_epoch, m.timestamp_epoch) DESC",
    "time_asc": "coalesce(m.updated_epoch, m.timestamp_epoch) ASC",
}


def _refuse_nul(value: Any) -> None:
    """FalkorDB cannot take a NUL character in a parameter (the query text breaks at it).

    Found by fuzzing: an id with a NUL in it turned a bad request into a graph error (503).
    Writes are refused field by field at validation; this guard catches every other road
    (ids in paths, query strings, relation endpoints) as the caller's error, not the store's.
    """
    if isinstance(value, str):
        if "\x00" in value:
            raise ValidationError("a value contains a NUL character (\\u0000), which cannot be stored or searched")
    elif isinstance(value, dict):
        for key, item in value.items():
            _refuse_nul(key)
            _refuse_nul(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _refuse_nul(item)


class GraphQueryTimeout(Unavailable):
    """FalkorDB stopped a read at its time limit: the graph is too busy or the read too wide."""


MISSING_GRAPH_ERROR = "empty key"  # FalkorDB's answer to a read of a graph that does not exist


class GraphStore:
    """Memory nodes in one FalkorDB graph.

    Reads carry a server-side time limit (``read_timeout_ms``, FALKORDB_QUERY_TIMEOUT_MS, for
    the reads that answer requests; a longer one for ``run_read``), so FalkorDB stops a read
    its caller has stopped waiting for instead of working on. Writes carry none: a write
    stopped half way is worse than a slow one.
    """

    def __init__(self, client: FalkorDB, graph_name: str, read_timeout_ms: int | None = None, write_rows: int = 0):
        self._client = client
        self._graph = client.select_graph(graph_name)
        self._read_timeout_ms = read_timeout_ms
        # Memories per write query of upsert_memories (0: all in one). A write holds the graph's
        # lock and every read (a recall's) waits behind it: a persist batch of 500-1000 memories
        # in one query held recall reads for 50-190 ms during an import (issue 21).
        self._write_rows = write_rows
        # Whether the full-text index has a content field, as this process last set or read it
        # (None: not known yet). Without one, content search scans (``_content_scan``).
        self._content_indexed: bool | None = None

    @classmethod
    def connect(cls, settings: Settings) -> "GraphStore":
        timeouts = {"socket_timeout": 10, "socket_connect_timeout": 3}
        if settings.falkordb_url:  # hosted FalkorDB / platform add-ons hand out one URL
            client = FalkorDB.from_url(settings.falkordb_url, **timeouts)
        else:
            client = FalkorDB(
                host=settings.falkordb_host,
                port=settings.falkordb_port,
                password=settings.falkordb_password,
                **timeouts,
            )
        return cls(client, settings.falkordb_graph, settings.falkordb_query_timeout_ms, settings.graph_write_rows)

    def _query(self, cypher: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        _refuse_nul(params)
        return self._graph.query(cypher, params or {}).result_set

    def _read(self, cypher: str, params: dict[str, Any] | None = None, timeout_ms: int | None = None) -> list[list[Any]]:
        _refuse_nul(params)
        limit = timeout_ms or self._read_timeout_ms
        try:
            return self._graph.ro_query(cypher, params or {}, timeout=limit).result_set
        except ResponseError as exc:
            if "timed out" in str(exc).lower():
                raise GraphQueryTimeout(f"a graph read ran past its time limit of {limit} ms "
                                        "(FALKORDB_QUERY_TIMEOUT_MS); try a narrower request") from None
            raise

    def _read_or_none(self, cypher: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        """A read that finds nothing when the graph does not exist at all.

        FalkorDB refuses reads of a graph that was never written (a lost volume, a wrong
        FALKORDB_GRAPH) instead of finding nothing in it; the lookups sync and /health rely on
        must see that graph as empty, so the sync guard can tell it apart from an outage.
        """
        try:
            return self._read(cypher, params)
        except ResponseError as exc:
            if MISSING_GRAPH_ERROR in str(exc):
                self.forget_schema()
                return []
            raise

    def forget_schema(self) -> None:
        """Drop the client's cached label and property names.

        The falkordb client maps the numeric ids of a result to names it cached, and refreshes
        the cache only for ids it has not seen. A graph created again under the same name
        numbers its properties anew, so a cache from before would put the wrong names on them.
        """
        self._graph.schema.clear()

    # Maintenance modules keep their own (always parameterised) Cypher next to the logic
    # that needs it, and run it through these two.
    def run_write(self, cypher: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        return self._query(cypher, params)

    def run_read(self, cypher: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        return self._read(cypher, params, BACKGROUND_QUERY_TIMEOUT_MS)

    def ping(self) -> bool:
        return bool(self._client.connection.ping())

    def ensure_schema(self, content_fulltext: bool = True) -> None:
        """Range indexes on id and timestamps, a full-text index on metadata and, with
        ``content_fulltext``, on content (``Settings.graph_content_fulltext``). Idempotent; an
        existing content field is left as it is (``set_content_fulltext`` drops it)."""
        statements = (
            "CREATE INDEX FOR (m:Memory) ON (m.id)",
            "CREATE INDEX FOR (m:Memory) ON (m.timestamp_epoch)",
            "CREATE INDEX FOR (m:Memory) ON (m.updated_epoch)",
            # One field per call: a call naming a field already indexed adds none of the others.
            "CALL db.idx.fulltext.createNodeIndex('Memory', 'metadata_text')",
            *((CONTENT_FULLTEXT_CREATE,) if content_fulltext else ()),
            *thread_schema,
            # Enrichment: exact-duplicate groups, and scope members (an array index serves `x IN m.tags`).
            "CREATE INDEX FOR (m:Memory) ON (m.content_hash)",
            "CREATE INDEX FOR (m:Memory) ON (m.tags)",
            # /health's count leaves the excluded types out by their index (count_memories).
            "CREATE INDEX FOR (m:Memory) ON (m.type)",
        )
        for statement in statements:
            self._schema_change(statement, "already indexed")
        self._content_indexed = None  # an older store may have the field though it was not asked for

    @property
    def content_indexed(self) -> bool:
        """Whether the full-text index covers content (read once, then kept as this process sets it)."""
        if self._content_indexed is None:
            rows = self._read("CALL db.indexes() YIELD label, types WHERE label = 'Memory' RETURN types")
            self._content_indexed = any("FULLTEXT" in (row[0] or {}).get("content", []) for row in rows)
        return self._content_indexed

    def set_content_fulltext(self, wanted: bool) -> None:
        """Add or drop the content field of the full-text index. Idempotent.

        Only keyword search through the graph reads it, and it is most of what a restart's
        load of the graph rebuilds (docs/benchmarks-log.md, session 48): the process that owns
        the live Qdrant Edge collection drops it once that collection's own text index answers
        keyword search, and adds it back for one that does not yet.
        """
        if wanted:
            self._schema_change(CONTENT_FULLTEXT_CREATE, "already indexed")
        else:
            self._schema_change("DROP FULLTEXT INDEX FOR (m:Memory) ON (m.content)", "no such index")
        self._content_indexed = wanted

    def _schema_change(self, statement: str, already: str) -> None:
        try:
            self._query(statement)
        except ResponseError as exc:
            if already not in str(exc):
                raise

    # --- writes ----------------------------------------------------------------------
    def upsert_memories(self, records: Iterable[MemoryRecord]) -> None:
        rows = [{"id": r.id, "props": node_properties(r.to_message()), "arrival": r.arrival} for r in records]
        step = self._write_rows or len(rows)
        for start in range(0, len(rows), step):  # a retry writes every chunk again: MERGE makes that harmless
            # arrival is kept from the first write: a retry or an update must not reorder the chain
            self._query("UNWIND $rows AS row MERGE (m:Memory {id: row.id}) SET m += row.props, "
                        "m.arrival = coalesce(m.arrival, row.arrival)", {"rows": rows[start:start + step]})

    def link_threads(self, records: Iterable[MemoryRecord]) -> None:
        """``PART_OF`` edges from replies to their thread roots (see ``pipeline.threads``)."""
        link_threads(self._query, records)

    def related(self, memory_id: str, rel_type: str) -> list[tuple[str, str]]:
        """(direction, other id) of the edges of one type at a memory: ``out`` or ``in``."""
        rows = self._read(
            "MATCH (m:Memory {id: $id})-[e]-(o:Memory) WHERE type(e) = $type "
            "RETURN CASE WHEN startNode(e) = m THEN 'out' ELSE 'in' END, o.id",
            {"id": memory_id, "type": rel_type},
        )
        return [(row[0], row[1]) for row in rows]

    def update_memory(self, memory_id: str, changes: dict[str, Any]) -> bool:
        result = self._query(
            "MATCH (m:Memory {id: $id}) SET m += $props RETURN m.id",
            {"id": memory_id, "props": node_properties(changes)},
        )
        return bool(result)

    def delete_memories(self, memory_ids: list[str]) -> int:
        result = self._query(
            "UNWIND $ids AS id MATCH (m:Memory {id: id}) DETACH DELETE m RETURN count(m)", {"ids": memory_ids}
        )
        return int(result[0][0]) if result else 0

    def touch(self, memory_ids: list[str], at: str) -> None:
        self._query("UNWIND $ids AS id MATCH (m:Memory {id: id}) SET m.last_accessed = $at", {"ids": memory_ids, "at": at})

    # --- reads -----------------------------------------------------------------------
    def get_memory(self, memory_id: str) -> dict[str, Any] | None:
        rows = self._read("MATCH (m:Memory {id: $id}) RETURN m", {"id": memory_id})
        return memory_from_node(rows[0][0].properties) if rows else None

    def get_memories(self, memory_ids: list[str]) -> dict[str, dict[str, Any]]:
        rows = self._read_or_none("MATCH (m:Memory) WHERE m.id IN $ids RETURN m", {"ids": memory_ids})
        memories = (memory_from_node(row[0].properties) for row in rows)
        return {m["id"]: m for m in memories}

    def count_memories(self, excluded_types: Iterable[str] = ()) -> int:
        """Memories whose type is not excluded. /health asks on every call, so it is two cheap
        reads: the label's count (kept by FalkorDB, no scan) less the excluded types' (the type
        index); a filter over every node would cost a scan of the whole graph (48 ms at 200k)."""
        rows = self._read_or_none("MATCH (m:Memory) RETURN count(m)")
        total = int(rows[0][0]) if rows else 0
        excluded = list(excluded_types)
        if not excluded or not total:
            return total
        rows = self._read_or_none("MATCH (m:Memory) WHERE m.type IN $excluded RETURN count(m)", {"excluded": excluded})
        return total - (int(rows[0][0]) if rows else 0)

    def read(self, cypher: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        """A read-only query for the recall modules; callers pass values only as parameters."""
        return self._read(cypher, params)

    def keyword_search(self, terms: list[str], scope: Scope, limit: int, field: str = "content") -> list[tuple[dict[str, Any], float]]:
        """Full-text candidates (stemmed, BM25-style score) inside the scope.

        ``field`` is ``content`` (keyword search) or ``metadata_text`` (the metadata sidecar).
        """
        if not terms:
            return []
        if field == "content" and not self.content_indexed:
            return [(memory_from_row(row[0]), float(row[1]))
                    for row in self._content_scan(terms, scope, limit, memory_projection("m"))]
        where, params = _scope_predicate(scope)
        cypher = (
            "CALL db.idx.fulltext.queryNodes('Memory', $text) YIELD node AS m, score "
            f"WHERE {where} "
            f"RETURN {memory_projection('m')}, score ORDER BY score DESC, m.importance DESC, m.timestamp_epoch DESC "
            "LIMIT $limit"
        )
        column = {"content": "content", "metadata_text": "metadata_text"}[field]
        params |= {"text": f"@{column}:(" + "|".join(terms) + ")", "limit": limit}
        return [(memory_from_row(row[0]), float(row[1])) for row in self._read(cypher, params)]

    def recall_memories(self, memory_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Memories by id with the projection recall reads (cheaper than whole nodes)."""
        if not memory_ids:
            return {}
        # One index scan over the id list: cheaper than an index lookup per UNWIND row.
        rows = self._read(f"MATCH (m:Memory) WHERE m.id IN $ids RETURN {memory_projection('m')}", {"ids": memory_ids})
        memories = (memory_from_row(row[0]) for row in rows)
        return {m["id"]: m for m in memories}

    def keyword_matches(self, terms: list[str], scope: Scope, limit: int) -> list[tuple[str, str, float]]:
        """Full-text matches as (id, content, score) only: cheap enough to read hundreds and rank
        them in Python (a full memory projection costs several times more)."""
        if not terms:
            return []
        if not self.content_indexed:
            return [(row[0], row[1] or "", float(row[2])) for row in self._content_scan(terms, scope, limit, "m.id, m.content")]
        where, params = _scope_predicate(scope)
        cypher = (
            "CALL db.idx.fulltext.queryNodes('Memory', $text) YIELD node AS m, score "
            f"WHERE {where} RETURN m.id, m.content, score ORDER BY score DESC, m.timestamp_epoch DESC LIMIT $limit"
        )
        params |= {"text": "@content:(" + "|".join(terms) + ")", "limit": limit}
        return [(row[0], row[1] or "", float(row[2])) for row in self._read(cypher, params)]

    def _content_scan(self, terms: list[str], scope: Scope, limit: int, projection: str) -> list[list[Any]]:
        """Content search without the full-text index: every memory in scope read, scored by
        how many of the terms its content holds. Only a recall whose vector store failed gets
        here when the graph leaves content to Edge's text index (``set_content_fulltext``): a
        full scan, a fraction of a second at 100k memories, bounded by the recall's query timeout."""
        where, params = _scope_predicate(scope)
        cypher = (
            f"MATCH (m:Memory) WHERE {where} "
            "WITH m, size([t IN $terms WHERE toLower(m.content) CONTAINS t]) AS score WHERE score > 0 "
            f"RETURN {projection}, score ORDER BY score DESC, m.importance DESC, m.timestamp_epoch DESC LIMIT $limit"
        )
        return self._read(cypher, params | {"terms": terms, "limit": limit})

    def trending(self, scope: Scope, limit: int, order: str = "importance") -> list[dict[str, Any]]:
        """No query: the memories in scope, most important (or newest/oldest) first."""
        where, params = _scope_predicate(scope)
        cypher = (f"MATCH (m:Memory) WHERE {where} RETURN {memory_projection('m')} "
                  f"ORDER BY {TRENDING_ORDERS[order]} LIMIT $limit")
        return [memory_from_row(row[0]) for row in self._read(cypher, params | {"limit": limit})]
