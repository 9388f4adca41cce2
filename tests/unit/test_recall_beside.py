"""The metadata sidecar's graph read runs beside the query's embedding and searches (query/beside.py)."""

from __future__ import annotations

import contextvars
import threading
from datetime import datetime, timezone

import pytest

from pipeline.config import Settings
from pipeline.graph import Scope
from pipeline.query.beside import INLINE, Beside
from pipeline.query.candidates import Candidate
from pipeline.query.context import ContextProfile
from pipeline.query.engine import RecallEngine
from pipeline.query.request import ContextHints, RecallRequest
from pipeline.query.search import QuerySearch, SearchContext, SearchPolicy
from tests.unit.fake_recall_sources import ScriptedSources

NEAR = [{"id": f"near{i}", "content": f"a day {i}", "tags": []} for i in range(3)]
BY_METADATA = {"id": "meta", "content": "notes", "tags": [], "metadata": {"project": "apollo"}}


class SidecarSources(ScriptedSources):
    """The sidecar waits (up to ``wait_s``) for the query to be embedded and says whether it was."""

    def __init__(self, wait_s: float):
        super().__init__(NEAR, lambda keywords: [])
        self.embedded = threading.Event()
        self.wait_s = wait_s
        self.sidecar: dict = {}

    def query_vector(self, text, status, nameless_weight=0.0, nameless_form="drop"):
        self.embedded.set()
        return super().query_vector(text, status, nameless_weight, nameless_form)

    def metadata(self, keywords, scope, slots, min_match, query):
        self.sidecar = {"thread": threading.current_thread().name, "saw_embedding": self.embedded.wait(self.wait_s)}
        return [Candidate(BY_METADATA, "metadata", "graph", metadata=1.0, query=query)]


@pytest.fixture
def beside():
    pool = Beside(1)
    yield pool
    pool.close()


def _context(settings: Settings) -> SearchContext:
    return SearchContext(Scope(), ContextProfile.build(ContextHints(), settings.context_bonuses),
                         datetime.now(timezone.utc), current_only=False)


def _recall(beside: Beside, wait_s: float) -> tuple[list[str], SidecarSources]:
    settings = Settings(recall_keyword_search="fill")
    sources = SidecarSources(wait_s)
    rows, _ = QuerySearch(sources, SearchPolicy.from_settings(settings), beside).run(  # type: ignore[arg-type]
        RecallRequest(query="apollo notes", limit=5), _context(settings), "score")
    return [r.id for r in rows], sources


def test_the_sidecar_reads_the_graph_while_the_query_is_embedded_and_its_match_joins_the_pool(beside):
    ids, sources = _recall(beside, wait_s=10.0)  # inline, it would wait all 10 s and see nothing
    assert sources.sidecar["thread"].startswith("recall-beside")
    assert sources.sidecar["saw_embedding"] is True
    assert "meta" in ids


def test_inline_gives_the_same_answer(beside):
    threaded, _ = _recall(beside, wait_s=10.0)
    inline, sources = _recall(INLINE, wait_s=0.0)
    assert sources.sidecar == {"thread": threading.current_thread().name, "saw_embedding": False}
    assert inline == threaded


def test_a_call_beside_keeps_the_callers_context_and_raises_what_it_raised(beside):
    request_id = contextvars.ContextVar("request_id")
    request_id.set("r-1")
    assert beside.start(request_id.get)() == "r-1"
    failed = beside.start(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        failed()


def test_the_default_is_four_threads_and_0_is_inline():
    assert Settings().recall_graph_reads_beside == 4
    assert Beside(0).start(threading.current_thread)() is threading.current_thread()


class PairGraph:
    """A graph whose one read (the neighbour pairs) answers near1 → near0, or fails."""

    def __init__(self, fails: bool = False):
        self.fails = fails
        self.threads: list[str] = []

    def read(self, query, params):
        self.threads.append(threading.current_thread().name)
        if self.fails:
            raise ConnectionError("graph down")
        return [("near1", "near0", 1)]


def _neighbour_components(graph: PairGraph, beside: Beside) -> dict[str, float]:
    settings = Settings(recall_keyword_search="fill", recall_metadata_search_enabled=False)
    rows, _ = QuerySearch(ScriptedSources(NEAR, lambda keywords: [], graph=graph),  # type: ignore[arg-type]
                          SearchPolicy.from_settings(settings), beside).run(RecallRequest(query="a day", limit=5),
                                                                            _context(settings), "score")
    return {r.id: r.components.get("neighbour", 0.0) for r in rows}


def test_the_neighbour_read_runs_beside_and_its_pairs_still_share(beside):
    graph = PairGraph()
    shares = _neighbour_components(graph, beside)
    assert len(graph.threads) == 1 and graph.threads[0].startswith("recall-beside")
    assert shares["near0"] > 0 and shares["near1"] > 0 and shares["near2"] == 0


def test_a_failed_neighbour_read_beside_leaves_the_recall_without_the_bonus(beside):
    shares = _neighbour_components(PairGraph(fails=True), beside)
    assert set(shares) == {"near0", "near1", "near2"} and not any(shares.values())


def _engine(beside: Beside | None) -> RecallEngine:
    return RecallEngine(Settings(recall_graph_reads_beside=1), graph=lambda: None, vectors=lambda: None,  # type: ignore[arg-type,return-value]
                        embedder=lambda: None, dimensions=lambda: 384, beside=beside)  # type: ignore[arg-type,return-value]


def test_an_engine_stops_the_threads_it_started_and_leaves_a_pool_passed_in_to_its_owner(beside):
    built = _engine(None)
    thread = built._search._beside.start(threading.current_thread)()
    assert thread.name.startswith("recall-beside")
    built.close()
    thread.join(timeout=5.0)  # idle pool threads exit as soon as shutdown wakes them
    assert not thread.is_alive()

    _engine(beside).close()
    assert beside.start(lambda: "still open")() == "still open"
