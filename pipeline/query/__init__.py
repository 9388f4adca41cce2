"""The recall engine: candidates → state filter → scoring → ranking controls → expansion → response."""

from pipeline.query.engine import RecallEngine
from pipeline.query.request import ContextHints, ExpansionOptions, RecallRequest

__all__ = ["ContextHints", "ExpansionOptions", "RecallEngine", "RecallRequest"]
