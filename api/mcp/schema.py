"""JSON Schemas for tool inputs, generated from pydantic models and made plain for LLMs."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def _plain(node: Any, *, names: bool = False) -> Any:
    """Collapse ``anyOf: [T, null]`` into ``T``; drop pydantic's titles and null defaults.

    ``names`` marks a ``properties`` mapping, whose keys are field names, not keywords.
    """
    if isinstance(node, list):
        return [_plain(item) for item in node]
    if not isinstance(node, dict):
        return node
    if names:
        return {name: _plain(value) for name, value in node.items()}
    node = {k: _plain(v, names=(k == "properties")) for k, v in node.items() if k != "title"}
    options = node.get("anyOf")
    if isinstance(options, list):
        non_null = [o for o in options if o != {"type": "null"}]
        if len(non_null) == 1 and len(non_null) < len(options):
            del node["anyOf"]
            node = {**non_null[0], **node}
    if "default" in node and node["default"] is None:
        del node["default"]
    return node


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The tool's ``inputSchema``: the model's schema without its docstring and titles."""
    schema = _plain(model.model_json_schema())
    schema.pop("description", None)
    return schema
