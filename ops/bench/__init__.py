"""Benchmarks, probes and profilers, and the stack harness they share with the tests.

Tooling, not product: run from a checkout (``python -m ops.bench.<name>``), never packaged.
"""
