"""Edge shards with and without int8 codes of their vectors, with and without an HNSW graph.

    python -m ops.bench.probe_edge_quantized [--points 100000] [--hnsw-points 50000] [--real 3000]

Below ``EDGE_PLAIN_MAX_POINTS`` the shipped shard is never optimized: every search reads every
float32 vector (1.5 KB a point). Qdrant can keep scalar-quantized copies (one byte a dimension,
in RAM) and search them first, rescoring the best candidates on the float32 vectors; with
``HnswIndexConfig(m=0)`` its optimizer builds those codes and no graph, which takes a linear
pass rather than an HNSW build. Past the plain size, where the shard is built with HNSW, the
same codes can carry the graph's walk. Measured here for each shard layout:

- ``optimize()`` seconds (what the build would hold the GIL for, in whichever process runs it);
- search p50 / p95 at ``limit`` 50 (recall's fetch size) and recall@10 against exact cosine,
  unscoped and filtered on one of 50 tags (a keyword index, as tag-scoped recall filters);
- the resident pages of a fresh process that only loads the shard and searches it
  (VmRSS, its own heap RssAnon and mapped files RssFile, in MB), as the web would after a swap.

Three vector sets: ``--points`` clustered random vectors (the scale figures of the unbuilt
layouts), ``--hnsw-points`` more of them for the HNSW layouts (a build per layout), and ``--real``
texts of ``../shared/data`` embedded by the local model, searched with the dev sets' questions
(the accuracy on the model's own distribution; 0 skips it). Prints a table and writes
``ops/bench/results/probe_edge_quantized.json``. Tooling, not product.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import shutil
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from pipeline.vectors.edge_swap import CODES_OVERSAMPLING, CODES_QUANTILE, ShardLayout

RESULTS = Path(__file__).resolve().parent / "results"
LIMIT = 50
TAGS = 50  # tag-scoped searches filter on one of these (a 2 % share of the points)
PLAIN_SEARCHES = {  # label: (layout, search params name)
    "plain float32 (shipped below EDGE_PLAIN_MAX_POINTS)": ("plain", None),
    "int8 codes, no graph: default search": ("int8_no_graph", None),
    f"int8 codes, no graph: rescore, oversampling {CODES_OVERSAMPLING:g}": ("int8_no_graph", "rescore"),
}
GRAPH_SEARCHES = {
    "HNSW, float32 (shipped above EDGE_PLAIN_MAX_POINTS)": ("hnsw", None),
    f"HNSW on int8 codes: rescore, oversampling {CODES_OVERSAMPLING:g}": ("hnsw_int8", "rescore"),
}


def shard_config(qe, layout: str):
    """``plain``: the shipped configuration, never optimized below the plain size; the others are
    optimized (indexing_threshold 1 KB: every segment, however small the set)."""
    if layout == "plain":
        return qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=384, distance=qe.Distance.Cosine))
    codes = (qe.ScalarQuantizationConfig(qe.ScalarType.Int8, quantile=CODES_QUANTILE, always_ram=True)
             if "int8" in layout else None)
    graph = qe.HnswIndexConfig(m=0 if layout == "int8_no_graph" else 16, ef_construct=100, full_scan_threshold=10)
    return qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=384, distance=qe.Distance.Cosine, quantization_config=codes,
                                                     hnsw_config=graph),
                         optimizers=qe.EdgeOptimizersConfig(indexing_threshold=1))


def tag_of(row: int) -> str:
    """One of TAGS values, as the growth benchmark tags its memories (``lifecycle-<n % 50>``)."""
    return f"t{row % TAGS}"


def build(path: str, layout: str, vectors: np.ndarray) -> float:
    """The shard written in chunks as the vector stage writes; ``optimize()`` seconds (0 for plain)."""
    import qdrant_edge as qe

    shard = qe.EdgeShard.create(path, shard_config(qe, layout))
    shard.update(qe.UpdateOperation.create_field_index("tag", qe.PayloadSchemaType.Keyword))
    for start in range(0, len(vectors), 2000):
        rows = vectors[start:start + 2000]
        shard.update(qe.UpdateOperation.upsert_points(
            [qe.Point(start + i + 1, row.tolist(), {"memory_id": str(start + i), "tag": tag_of(start + i)})
             for i, row in enumerate(rows)]))
    took = 0.0
    if layout != "plain":  # "hnsw" included: the shipped build past the plain size
        began = time.perf_counter()
        shard.optimize()
        took = time.perf_counter() - began
    shard.flush()
    shard.close()
    return took


def resident_mb() -> dict[str, float]:
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile"):
            out[key] = round(int(value.split()[0]) / 1024, 1)
    return out


def measure(path: str, layout: str, params_name: str | None, queries_file: str, exact_file: str,
            tagged_exact_file: str) -> dict:
    """In a fresh process: load the shard, search every query twice (the second round timed),
    unscoped and then filtered on one tag (query ``n`` on ``tag_of(n)``)."""
    import qdrant_edge as qe

    queries, exact, tagged_exact = np.load(queries_file), np.load(exact_file), np.load(tagged_exact_file)
    before = resident_mb()
    shard = qe.EdgeShard.load(path, shard_config(qe, layout))
    # "rescore": what the shipped store asks for with codes on
    params = ShardLayout(384, vector_codes="int8").search_params(qe) if params_name == "rescore" else None

    def timed(truths: np.ndarray, scoped: bool) -> dict:
        times, found = [], []
        for round_ in range(2):
            for n, (query, truth) in enumerate(zip(queries, truths)):
                condition = (qe.Filter(must=[qe.FieldCondition(key="tag", match=qe.MatchValue(tag_of(n)))])
                             if scoped else None)
                began = time.perf_counter()
                hits = shard.search(qe.SearchRequest(query=qe.Query.Nearest(query.tolist()), limit=LIMIT, params=params,
                                                     filter=condition,
                                                     with_payload=qe.PayloadSelector.Include(["memory_id"])))
                if round_:
                    times.append((time.perf_counter() - began) * 1000)
                    found.append(len(set(truth.tolist()) & {int(h.id) for h in hits[:10]}) / 10)
        times.sort()
        return {"p50_ms": round(times[len(times) // 2], 2), "p95_ms": round(times[int(len(times) * 0.95)], 2),
                "recall_at_10": round(float(np.mean(found)), 4)}

    row = timed(exact, scoped=False)
    after = resident_mb()
    row["tagged"] = timed(tagged_exact, scoped=True)
    shard.close()
    row["resident_mb"] = {key: round(after[key] - before[key], 1) for key in after}
    return row


def clustered(points: int, queries: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(300, 384)).astype(np.float32)

    def around(count: int) -> np.ndarray:
        rows = centres[rng.integers(0, len(centres), count)] + 0.7 * rng.normal(size=(count, 384)).astype(np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return around(points), around(queries)


def real(texts: int) -> tuple[np.ndarray, np.ndarray]:
    """Texts of the dev data embedded as the embed stage does; the dev sets' questions as queries."""
    from ops.bench.lifecycle import questions
    from ops.bench.real import DATA, conversation_turns, slack_texts
    from pipeline.config import Settings
    from pipeline.embedding import build_embedder
    from pipeline.labelled import embed_contents_f32

    corpus = [t["content"] for t in conversation_turns(texts)]
    corpus += [t for name in ("r-contributors", "houstondatavis") for t in slack_texts(DATA / "slack-dev" / name)]
    embedder = build_embedder(Settings(EMBEDDING_PROVIDER="local"))
    vectors = embed_contents_f32(embedder, corpus[:texts])
    asked = np.asarray(embedder.embed_f32(questions(200)), dtype=np.float32)
    return vectors.astype(np.float32), asked


def run_set(name: str, vectors: np.ndarray, queries: np.ndarray, scratch: Path, searches: dict) -> dict:
    similarity = vectors @ queries.T
    exact = np.argsort(-similarity, axis=0)[:10].T + 1  # point ids are row + 1
    tags = np.arange(len(vectors)) % TAGS
    tagged_exact = np.stack([np.argsort(-np.where(tags == n % TAGS, similarity[:, n], -np.inf))[:10] + 1
                             for n in range(len(queries))])
    np.save(scratch / "queries.npy", queries)
    np.save(scratch / "exact.npy", exact)
    np.save(scratch / "tagged_exact.npy", tagged_exact)
    layouts = sorted({layout for layout, _ in searches.values()})
    paths = {layout: str(scratch / f"{name}-{layout}") for layout in layouts}
    optimize_s = {layout: round(build(paths[layout], layout, vectors), 2) for layout in layouts}
    rows = {}
    spawn = multiprocessing.get_context("spawn")
    for label, (layout, params) in searches.items():
        with spawn.Pool(1) as pool:
            rows[label] = pool.apply(measure, (paths[layout], layout, params, str(scratch / "queries.npy"),
                                               str(scratch / "exact.npy"), str(scratch / "tagged_exact.npy")))
        rows[label]["optimize_s"] = optimize_s[layout]
    return {"points": len(vectors), "queries": len(queries), "searches": rows}


def render(report: dict) -> str:
    lines = ["| vectors | shard | optimize s | search p50 / p95 ms | recall@10 | one tag (2 %): p50 / p95 ms | recall@10 "
             "| resident MB of a loaded shard: all (heap / files) |",
             "|---|---|---|---|---|---|---|---|"]
    for name, result in report["sets"].items():
        for label, row in result["searches"].items():
            rss, tagged = row["resident_mb"], row["tagged"]
            lines.append(f"| {name} ({result['points']:,}) | {label} | {row['optimize_s']} | {row['p50_ms']} / {row['p95_ms']} "
                         f"| {row['recall_at_10']} | {tagged['p50_ms']} / {tagged['p95_ms']} | {tagged['recall_at_10']} "
                         f"| {rss.get('VmRSS')} ({rss.get('RssAnon')} / {rss.get('RssFile')}) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.probe_edge_quantized", description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100_000, help="clustered random vectors (0: skip)")
    parser.add_argument("--hnsw-points", type=int, default=50_000,
                        help="clustered random vectors for the HNSW layouts, float32 and on int8 codes (0: skip)")
    parser.add_argument("--real", type=int, default=3000, help="real texts embedded by the local model (0: skip)")
    parser.add_argument("--out", type=Path, default=RESULTS / "probe_edge_quantized.json")
    args = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="probe-quantized-"))
    report: dict = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "limit": LIMIT, "sets": {}}
    try:
        if args.points:
            report["sets"]["clustered"] = run_set("clustered", *clustered(args.points, 200), scratch, PLAIN_SEARCHES)
        if args.hnsw_points:
            report["sets"]["clustered, indexed"] = run_set("indexed", *clustered(args.hnsw_points, 200, seed=1), scratch,
                                                           GRAPH_SEARCHES)
        if args.real:
            report["sets"]["real texts, local model"] = run_set("real", *real(args.real), scratch,
                                                                {**PLAIN_SEARCHES, **GRAPH_SEARCHES})
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(render(report))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
