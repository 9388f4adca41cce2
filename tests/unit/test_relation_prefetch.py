"""The relation prefetch: edges of the nearest vector hits, requested before scoring ends."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

from pipeline.query.graph_reads import Edge
from pipeline.query.prefetch import RelationPrefetch, submitter


def edge(seed: str, other: str) -> Edge:
    return Edge(seed, "RELATES_TO", 0.5, True, None, {"id": other})


class Graph:
    def __init__(self, fail_first: bool = False):
        self.calls: list[list[str]] = []
        self.fail_first = fail_first

    def __call__(self, ids):
        self.calls.append(list(ids))
        if self.fail_first and len(self.calls) == 1:
            raise ConnectionError("graph down")
        return {i: [edge(i, f"{i}-x")] for i in ids if i != "lonely"}


def test_covered_ids_cost_no_second_read_and_missing_ones_are_fetched():
    graph = Graph()
    with ThreadPoolExecutor(2) as pool:
        prefetch = RelationPrefetch(submitter(pool), graph, size=3)
        prefetch(["a", "b", "lonely", "d"])  # only the nearest three
        prefetch(["a", "e"])  # a second query: only what is new
        edges = prefetch.edges(["lonely", "a", "d"])
    assert sorted(graph.calls) == [["a", "b", "lonely"], ["d"], ["e"]]
    assert set(edges) == {"a", "d"} and edges["a"][0].memory["id"] == "a-x"  # lonely: covered, no edges


def test_a_failed_prefetch_is_fetched_again_and_unneeded_ones_are_not_awaited():
    graph = Graph(fail_first=True)
    never: Future = Future()  # would block forever if waited on
    calls = iter([lambda fn, ids: submitter(None)(fn, ids), lambda fn, ids: never])
    prefetch = RelationPrefetch(lambda fn, ids: next(calls)(fn, ids), graph, size=5)
    prefetch(["a", "b"])
    prefetch(["z"])
    assert set(prefetch.edges(["a", "b"])) == {"a", "b"}
    assert graph.calls == [["a", "b"], ["a", "b"]]


def test_submitter_without_executor_runs_inline_and_keeps_exceptions():
    done = submitter(None)(lambda x: x * 2, 21)
    assert done.result() == 42
    failed = submitter(None)(lambda: 1 / 0)
    assert isinstance(failed.exception(), ZeroDivisionError)
