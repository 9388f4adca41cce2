"""Enrichment: what the pipeline learns about a memory after it is recallable.

Pure parts (scopes, entities, summaries, the LLM client and the classifier that falls back
to patterns) live here; the actors in ``pipeline.actors.enrich`` and
``pipeline.actors.similarity`` wire them to the stores.
"""
