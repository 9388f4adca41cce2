"""The map in ``pipeline.stages`` is the stage graph: actors agree with it, and import only it.

Imports are read from the source with ``ast`` (every import, those inside functions too), so
a lazy import that would hide a cycle at run time is found here.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PIPELINE = ROOT / "pipeline"
WRITE_PATH = ("pipeline.actors.persist", "pipeline.actors.embed", "pipeline.actors.vectors")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, known: set[str]) -> set[str]:
    """The ``pipeline`` modules ``path`` imports anywhere in its body (``from a import b`` counts
    ``a.b`` where that is a module, else ``a``)."""
    found = set()
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            found |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names}
    return {name for name in found if name in known}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in PIPELINE.rglob("*.py")}
    return {name: imported_modules(path, set(paths)) for name, path in paths.items()}


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph[todo.pop()] - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen


def actor_modules(graph) -> list[str]:
    return sorted(m for m in graph if m.startswith("pipeline.actors."))


def test_no_actor_module_imports_another(graph):
    for module in actor_modules(graph):
        others = {m for m in graph[module] if m.startswith("pipeline.actors")}
        assert not others, f"{module} imports {sorted(others)}: send through pipeline.stages instead"


def test_no_import_cycle_runs_through_an_actor_module_or_the_map(graph):
    for module in [*actor_modules(graph), "pipeline.stages", "pipeline.actor_context"]:
        assert module not in reachable(graph, module), f"{module} is on an import cycle"


def test_the_write_path_reports_to_the_migration_through_a_hook_not_an_import(graph):
    for module in WRITE_PATH:
        assert not {m for m in reachable(graph, module) if m.startswith("pipeline.maintenance")}, module


def test_every_declared_actor_is_on_the_map_on_its_queue():
    import pipeline.actors
    from pipeline.stages import BY_ACTOR, STAGES

    broker = pipeline.actors.broker
    assert set(broker.actors) == set(BY_ACTOR)
    for stage in STAGES:
        assert broker.get_actor(stage.actor).queue_name == stage.queue
        assert set(stage.sends) <= set(BY_ACTOR), stage.actor


def test_actors_read_their_services_from_the_broker_middleware(monkeypatch):
    import dramatiq

    import pipeline.actors
    from pipeline.actor_context import ActorContext, actor_context, services, use_services

    broker = pipeline.actors.broker
    monkeypatch.setattr(dramatiq, "get_broker", lambda: broker)  # another test may have set a stub broker
    assert not hasattr(broker, "services")
    before = actor_context(broker).services
    try:
        marker = object()
        use_services(broker, marker)
        assert services() is marker and isinstance(actor_context(broker), ActorContext)
    finally:
        use_services(broker, before)


def _string_args_of_send(tree: ast.AST) -> set[str]:
    return {node.args[0].value for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "send"
            and node.args and isinstance(node.args[0], ast.Constant)}


def test_what_each_actor_module_sends_is_on_the_map():
    """The actors a module sends to (through the map's helpers, or to its own actors) are among
    the ``sends`` of the stages it declares."""
    from pipeline.stages import BY_ACTOR

    stages_tree = ast.parse((PIPELINE / "stages.py").read_text())
    helpers = {fn.name: _string_args_of_send(fn) for fn in stages_tree.body if isinstance(fn, ast.FunctionDef)}
    for path in sorted((PIPELINE / "actors").glob("*.py")):
        tree = ast.parse(path.read_text())
        declared = {d.args[0].value for fn in tree.body if isinstance(fn, ast.FunctionDef) for d in fn.decorator_list
                    if isinstance(d, ast.Call) and getattr(d.func, "id", "") in ("stage_actor", "draining_actor")}
        sent = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in helpers:
                sent |= helpers[node.func.id]
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "send"
                  and isinstance(node.func.value, ast.Name) and node.func.value.id in declared):
                sent.add(node.func.value.id)
        allowed = {target for name in declared for target in BY_ACTOR[name].sends}
        assert sent <= allowed, f"{path.name} sends {sorted(sent - allowed)}: add them to its stages' sends"
