"""The recall engine: candidates, scoring, response. The API parses; this decides."""

from pipeline.query.engine import RecallEngine, RecallRequest

__all__ = ["RecallEngine", "RecallRequest"]
