"""One suite, one report: every benchmark under ``ops/`` run as a subprocess, one JSON, one table.

    python -m ops.bench.suite                 # the full suite (hours on a small machine)
    python -m ops.bench.suite --quick         # a minutes-long subset with small sizes
    python -m ops.bench.suite --only recall,maintenance
    python -m ops.bench.suite --render-only --write-docs

Each benchmark keeps its own command line and its own JSON under ``ops/bench/results/``; the suite
only chooses the arguments, times the section, records the machine and the load around it,
reads the JSON back and writes ``ops/bench/results/suite.json`` and ``ops/bench/results/suite.md``.
"""
