"""Slack as a source: export reading, message rendering and mapping to memory bodies."""
