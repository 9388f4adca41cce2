"""Which package may import which: the product (``api``, ``pipeline``) never imports ``ops``.

``ops/`` holds what operators run (the launcher, the clock, backup and restore, dead letters,
imports) and the benchmarks; the libraries the product uses live under ``pipeline/``. An import
the other way would ship operator tooling inside the web and worker processes.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("api", "pipeline")


def imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """Every absolute module an ``import``/``from … import`` names, at any depth (lazy ones too)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def imports_of_ops(source: str) -> list[tuple[int, str]]:
    return [(line, name) for line, name in imported_modules(ast.parse(source))
            if name == "ops" or name.startswith("ops.")]


@pytest.mark.parametrize("package", PRODUCT)
def test_the_product_never_imports_ops(package):
    offenders = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for line, name in imports_of_ops(path.read_text()):
            offenders.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert not offenders, "\n".join(offenders)


def test_the_scan_sees_every_form_of_import():
    source = "import ops\nimport ops.clock as c\nfrom ops import backup\ndef f():\n    from ops.bench import stack\n"
    assert [name for _, name in imports_of_ops(source)] == ["ops", "ops.clock", "ops", "ops.bench"]
    assert imports_of_ops("import opsy\nfrom operator import add\nfrom . import ops\n") == []
