"""Bounds on what one request may make the service do, where they are not settings.

Every parameter a caller controls has a ceiling, so that no request can make the web process
or the graph work without end: a parameter past its ceiling is refused with a 400 that names
it and the limit, never cut silently (the one exception, full-text terms, is documented where
it applies). The ceilings an operator could plausibly want to change are settings
(``RECALL_MAX_QUERIES``, ``RECALL_MAX_QUERY_CHARS``, ``RECALL_MAX_LIST_ITEMS``,
``FALKORDB_QUERY_TIMEOUT_MS``); the rest live here. docs/deployment.md ("Limits") lists all.
"""

from __future__ import annotations

# Natural-language time windows are short phrases ("between last March and yesterday").
TIME_QUERY_MAX_CHARS = 200

# The parser reads one connective ("since", "before", "between ... and ...") around plain
# phrases: "since since since ..." nests no deeper than this.
TIME_QUERY_MAX_NESTING = 1

# context, language and active_path are labels and paths, not prose.
HINT_MAX_CHARS = 1024

# Distinct words of a query sent to the full-text index (the first ones, in query order): a
# long pasted query still searches, and the index query stays one bounded OR of terms.
FULLTEXT_MAX_TERMS = 32

# GET /memories/{id}/related walks the graph breadth first; each hop reads at most this many
# relationships from the memories found one hop closer (strongest first), so a hub costs one
# bounded read per hop instead of every path through it.
RELATED_LINKS_PER_HOP = 2000

# Graph reads made by maintenance and enrichment (paged, off the request path) stop on the
# server just before the client's socket timeout (10 s), so no query outlives its caller.
BACKGROUND_QUERY_TIMEOUT_MS = 9_500
