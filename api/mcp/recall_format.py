"""recall_memory's output: per-memory views, the four formats, and the response budget.

Pure functions over the REST response bodies, so every rule is unit-tested without a server.

- ``text`` / ``items`` / ``detailed`` show a 400-character content preview (flagged with
  ``content_truncated`` and ``content_chars``), keep a stored ``summary`` as an extra field,
  and ``detailed`` adds type, confidence, metadata keys and up to 3 relation stubs.
- ``json`` passes each memory's fields through whole (``t_valid``, ``t_invalid``,
  ``archived`` included); a result that does not fit whole is shown in compact form.
- The budget (``AUTOMEM_RECALL_TOKEN_BUDGET``, estimated at 4 characters a token) bounds the
  whole response: structured content plus every text block. Results are cut from the end,
  in order; diagnostics are dropped only when they do not fit even without results; an
  enumeration page that was cut still pages on (``has_more``, ``next_offset``). When not
  even one result fits, the tool answers with an error instead of an empty page.
- ID fetches are never cut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

import orjson

from pipeline.tokens import estimate_tokens

PREVIEW_CHARS = 400
MAX_RELATION_STUBS = 3
STUB_SUMMARY_CHARS = 100

# Never dropped to make room: they say what the response is and how to page on.
_PROTECTED_FIELDS = frozenset({"mode", "count", "results", "has_more", "limit", "offset", "next_offset", "truncation"})
_RESULT_PASSTHROUGH = ("match_type", "outside_tag_scope", "expanded_from_entity", "state_replaces", "deduped_from", "state")
_STATE_FIELDS = ("t_valid", "t_invalid", "archived")


class BudgetExceeded(Exception):
    """Not even one result (or the bare response) fits the token budget."""


@dataclass
class ToolOutput:
    structured: dict[str, Any]
    texts: list[str] = field(default_factory=list)


def to_json(value: Any) -> str:
    return orjson.dumps(value, default=str).decode()


def response_tokens(output: ToolOutput) -> int:
    """What the whole response costs: structured content plus every text block."""
    return estimate_tokens(to_json(output.structured)) + sum(estimate_tokens(t) for t in output.texts)


# --- per-memory views --------------------------------------------------------------------

def _unpack(result: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """A ranked result wraps the memory (``{"id", "memory": {...}}``); a listed one is the memory."""
    memory = result["memory"] if isinstance(result.get("memory"), dict) else result
    return memory, result.get("id") or memory.get("id") or memory.get("memory_id")


def raw_view(result: dict[str, Any]) -> dict[str, Any]:
    """Every field, whole: the memory's, then the result's (score, relations, ...)."""
    memory, memory_id = _unpack(result)
    view: dict[str, Any] = {"memory_id": memory_id}
    if memory.get("timestamp") is not None:
        view["created_at"] = memory["timestamp"]
    view.update({k: v for k, v in memory.items() if k not in ("id", "memory_id", "timestamp", "embedding")})
    for name in _STATE_FIELDS:
        view.setdefault(name, None)
    if memory is not result:
        view.update({k: v for k, v in result.items() if k not in ("id", "memory")})
    return view


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit]


def relation_stub(relation: dict[str, Any]) -> dict[str, Any]:
    target = relation.get("memory") if isinstance(relation.get("memory"), dict) else {}
    summary = target.get("summary") or target.get("content") or relation.get("summary") or relation.get("content") or ""
    stub = {
        "id": relation.get("id") or target.get("id") or relation.get("memory_id"),
        "from": relation.get("from"),
        "type": relation.get("type") or relation.get("relationship_type"),
        "strength": relation.get("strength"),
        "kind": relation.get("kind"),
        "summary": _clip(str(summary), STUB_SUMMARY_CHARS),
    }
    return {k: v for k, v in stub.items() if v not in (None, "")}


def compact_view(result: dict[str, Any], *, detailed: bool) -> dict[str, Any]:
    """The budgeted formats' view: a content preview and the fields an agent acts on."""
    memory, memory_id = _unpack(result)
    content = str(memory.get("content") or "")
    view: dict[str, Any] = {"memory_id": memory_id, "content": _clip(content, PREVIEW_CHARS)}
    if len(content) > PREVIEW_CHARS:
        view["content_truncated"] = True
        view["content_chars"] = len(content)
    if memory.get("summary"):
        view["summary"] = memory["summary"]
    for name in ("tags", "importance"):
        if memory.get(name) is not None:
            view[name] = memory[name]
    if memory.get("timestamp") is not None:
        view["created_at"] = memory["timestamp"]
    if result.get("final_score") is not None:
        view["final_score"] = result["final_score"]
    for name in _RESULT_PASSTHROUGH:
        if name in result and result is not memory:
            view[name] = result[name]
    relations = result.get("relations") or []
    view["relation_count"] = len(relations)
    if detailed:
        for name in ("type", "confidence"):
            if memory.get(name) is not None:
                view[name] = memory[name]
        view["metadata_keys"] = sorted((memory.get("metadata") or {}).keys())
        view["relations"] = [relation_stub(r) for r in relations[:MAX_RELATION_STUBS] if isinstance(r, dict)]
    return view


def memory_view(result: dict[str, Any], fmt: str) -> dict[str, Any]:
    return raw_view(result) if fmt == "json" else compact_view(result, detailed=fmt == "detailed")


# --- text rendering ----------------------------------------------------------------------

_SPACE = re.compile(r"\s+")


def _plural(count: int) -> str:
    return "memory" if count == 1 else "memories"


def render_memory(number: int, view: dict[str, Any], *, full: bool = False) -> str:
    """One numbered list item: the preview (or summary), tags, importance, score, match, relations."""
    content = view.get("content") or ""
    head = content if full else _SPACE.sub(" ", content).strip()
    if not head:
        head = view.get("summary") or "(empty)"
    elif view.get("content_truncated"):
        head += "…"
    line = f"{number}. {head}"
    if view.get("tags"):
        line += f" [{', '.join(map(str, view['tags']))}]"
    if view.get("importance") is not None:
        line += f" (importance: {view['importance']})"
    if isinstance(view.get("final_score"), (int, float)):
        line += f" score={view['final_score']:.3f}"
    if view.get("match_type"):
        line += f" [{view['match_type']}]"
    relations = view.get("relation_count", len(view.get("relations") or []))
    line += f" relations={relations}"
    lines = [line, f"   ID: {view.get('memory_id')}"]
    if view.get("created_at"):
        lines.append(f"   Created: {view['created_at']}")
    if view.get("summary") and content:
        lines.append(f"   Summary: {view['summary']}")
    if view.get("outside_tag_scope"):
        lines.append("   (outside the requested tag scope)")
    if view.get("expanded_from_entity"):
        lines.append(f"   Via entity: {view['expanded_from_entity']}")
    if "metadata_keys" in view:  # detailed
        kind = view.get("type") or "?"
        confidence = view.get("confidence")
        lines.append(f"   Type: {kind}" + (f" (confidence: {confidence:.2f})" if isinstance(confidence, (int, float)) else ""))
        if view["metadata_keys"]:
            lines.append(f"   Metadata keys: {', '.join(view['metadata_keys'])}")
        for stub in view.get("relations") or []:
            origin = f" from {stub['from']}" if stub.get("from") else ""
            strength = f" ({stub['strength']})" if stub.get("strength") is not None else ""
            lines.append(f"   → {stub.get('type', 'RELATED')}{strength} {stub.get('id')}{origin}: {stub.get('summary', '')}")
    if view.get("state"):
        lines.append(f"   State: {view['state']}")
    return "\n".join(lines)


def stats_line(structured: dict[str, Any]) -> str | None:
    parts = []
    if structured.get("dedup_removed"):
        parts.append(f"{structured['dedup_removed']} duplicates removed")
    entity = structured.get("entity_expansion") or {}
    if entity.get("expanded_count"):
        names = entity.get("entities_found") or []
        parts.append(f"{entity['expanded_count']} via entity expansion" + (f" ({', '.join(names)})" if names else ""))
    relation = structured.get("expansion") or {}
    if relation.get("expanded_count"):
        parts.append(f"{relation['expanded_count']} via relation expansion")
    return f"({'; '.join(parts)})" if parts else None


def header_line(structured: dict[str, Any]) -> str:
    count = structured["count"]
    if structured.get("mode") == "enumeration":
        line = f"Tag listing: {count} {_plural(count)} from offset {structured.get('offset', 0)}"
        return line + ("; more remain" if structured.get("has_more") else "; no more pages")
    if structured.get("mode") == "id_fetch":
        return "Memory:"
    if not count:
        return "No memories found."
    query = structured.get("query")
    return f"Found {count} {_plural(count)}" + (f" for {query!r}" if isinstance(query, str) and query else "") + ":"


def notes(structured: dict[str, Any], budget: int) -> list[str]:
    found = []
    cut = structured.get("truncation") or {}
    if cut.get("omitted_results"):
        found.append(f"{cut['omitted_results']} more result(s) omitted to fit the response budget of {budget} tokens")
    if cut.get("compacted_results"):
        found.append(f"{cut['compacted_results']} result(s) shown compact to fit; fetch the full record with memory_id")
    if cut.get("omitted_fields"):
        found.append(f"diagnostics omitted to fit: {', '.join(cut['omitted_fields'])}")
    if structured.get("mode") == "enumeration" and structured.get("has_more"):
        found.append(f"next page: offset={structured.get('next_offset')}")
    if any(r.get("content_truncated") for r in structured.get("results", [])):
        found.append("previews are cut at 400 characters; fetch a full record with memory_id")
    return found


def render(structured: dict[str, Any], fmt: str, budget: int) -> list[str]:
    """The text blocks of a response in ``fmt``."""
    if fmt == "json":
        return [to_json(structured)]
    full = structured.get("mode") == "id_fetch"
    items = [render_memory(i, view, full=full) for i, view in enumerate(structured["results"], 1)]
    trailing = notes(structured, budget)
    if fmt == "items":
        blocks = items + ([f"[{'; '.join(trailing)}]"] if trailing else [])
        return blocks or ["[no memories found]"]
    lines = [header_line(structured)]
    stats = stats_line(structured)
    if stats:
        lines.append(stats)
    lines += items
    if trailing:
        lines.append(f"[{'; '.join(trailing)}]")
    return ["\n".join(lines)]


# --- normalising the REST answers --------------------------------------------------------

def ranked_base(body: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """GET /recall's body → the structured skeleton (diagnostics) and its results.

    A diagnostic the service reports as null is left out: absent and null mean the same to
    the caller, and the output schema types each field that is present.
    """
    base = {k: v for k, v in body.items() if k not in ("status", "results", "count") and v is not None}
    return {"mode": "ranked", **base}, list(body.get("results") or [])


def enumeration_base(body: dict[str, Any], offset: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """GET /memory/by-tag's body → skeleton with page metadata, and its memories."""
    memories = list(body.get("memories") or [])
    start = body.get("offset", offset)
    base = {k: v for k, v in body.items() if k not in ("status", "memories", "count")}
    base.update({"mode": "enumeration", "offset": start, "limit": body.get("limit", len(memories)),
                 "has_more": bool(body.get("has_more"))})
    if base["has_more"]:
        base["next_offset"] = start + len(memories)
    return base, memories


def present_id_fetch(body: dict[str, Any], fmt: str) -> ToolOutput:
    """GET /memory/{id} → the whole record; never budgeted (this is how to get a full record)."""
    memory = dict(body.get("memory") or {})
    memory.setdefault("id", body.get("memory_id"))
    view = raw_view(memory)
    if body.get("state"):
        view["state"] = body["state"]
    if body.get("status") == "pending":
        view["pending"] = True
    structured = {"mode": "id_fetch", "count": 1, "results": [view]}
    return ToolOutput(structured, render(structured, fmt, budget=0))


# --- the budget --------------------------------------------------------------------------

def _assemble(base, views, omitted, compacted, omitted_fields, fmt, budget) -> ToolOutput:
    structured = {k: v for k, v in base.items() if k not in omitted_fields}
    structured["count"] = len(views)
    structured["results"] = views
    if omitted or compacted or omitted_fields:
        cut: dict[str, Any] = {"applied": True, "omitted_results": omitted, "reason": "token_budget"}
        if omitted_fields:
            cut["omitted_fields"] = list(omitted_fields)
        if compacted:
            cut["compacted_results"] = compacted
        structured["truncation"] = cut
        if omitted and structured.get("mode") == "enumeration":
            # The page shrank: offset + limit still starts the next one.
            structured["limit"] = len(views)
            structured["has_more"] = True
            structured["next_offset"] = structured.get("offset", 0) + len(views)
    return ToolOutput(structured, render(structured, fmt, budget))


def budget_response(base: dict[str, Any], results: list[dict[str, Any]], fmt: str, budget: int,
                    view: Callable[[dict[str, Any], str], dict[str, Any]] = memory_view) -> ToolOutput:
    """The largest in-order prefix of ``results`` whose whole response fits ``budget`` tokens."""
    views = [view(r, fmt) for r in results]
    whole = _assemble(base, views, 0, 0, (), fmt, budget)
    if response_tokens(whole) <= budget:
        return whole

    def fits(output: ToolOutput) -> bool:
        return response_tokens(output) <= budget

    # Diagnostics go only if the response does not fit even without any result.
    omitted_fields: list[str] = []
    droppable = sorted((k for k in base if k not in _PROTECTED_FIELDS), key=lambda k: -len(to_json(base[k])))
    while not fits(_assemble(base, [], len(results), 0, omitted_fields, fmt, budget)):
        if not droppable:
            raise BudgetExceeded(f"the response budget of {budget} tokens is too small for even an empty response")
        omitted_fields.append(droppable.pop(0))

    kept: list[dict[str, Any]] = []
    compacted = 0
    for result, whole_view in zip(results, views):
        remaining = len(results) - len(kept) - 1
        if fits(_assemble(base, kept + [whole_view], remaining, compacted, omitted_fields, fmt, budget)):
            kept.append(whole_view)
            continue
        if fmt == "json":
            compact = compact_view(result, detailed=True)
            if fits(_assemble(base, kept + [compact], remaining, compacted + 1, omitted_fields, fmt, budget)):
                kept.append(compact)
                compacted += 1
                continue
        break
    if results and not kept:
        where = f"the record at offset {base.get('offset', 0)}" if base.get("mode") == "enumeration" else "the top result"
        raise BudgetExceeded(
            f"{where} does not fit in the response budget of {budget} tokens (AUTOMEM_RECALL_TOKEN_BUDGET); "
            "fetch it with memory_id, or use a budgeted format (text, items, detailed)"
        )
    return _assemble(base, kept, len(results) - len(kept), compacted, omitted_fields, fmt, budget)


def present_ranked(body: dict[str, Any], fmt: str, budget: int) -> ToolOutput:
    base, results = ranked_base(body)
    return budget_response(base, results, fmt, budget)


def present_enumeration(body: dict[str, Any], offset: int, fmt: str, budget: int) -> ToolOutput:
    base, memories = enumeration_base(body, offset)
    return budget_response(base, memories, fmt, budget)
