"""One suite, one report: every benchmark under ``ops/`` run as a subprocess, one JSON, one table.

    python -m ops.suite                 # the full suite (hours on a small machine)
    python -m ops.suite --quick         # a minutes-long subset with small sizes
    python -m ops.suite --only recall,maintenance
    python -m ops.suite --render-only --write-readme

Each benchmark keeps its own command line and its own JSON under ``ops/results/``; the suite
only chooses the arguments, times the section, records the machine and the load around it,
reads the JSON back and writes ``ops/results/suite.json`` and ``ops/results/suite.md``.
"""
