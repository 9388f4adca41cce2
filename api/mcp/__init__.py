"""The built-in MCP endpoint (streamable HTTP at ``/mcp``, same tokens as the REST API).

Every tool is a thin layer over mempipe's own REST routes, called in-process with the
caller's credentials (``rest.py``): the MCP surface behaves exactly as the API does, and
gains whatever the API gains. ``recall_memory`` adds the spec's client-side work on top:
mode routing (``recall_args.py``) and response budgeting and formats (``recall_format.py``).
"""
