"""The HTTP face of mempipe: parse, validate, enqueue, or ask the recall engine."""
