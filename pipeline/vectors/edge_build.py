"""The child process that builds the index of a copy of an Edge shard (issue 21).

``python -m pipeline.vectors.edge_build <shard>.build --size N ...``, started by the web
(pipeline.vectors.edge_swap): opens the copy with the build's layout (the web's, with or
without the HNSW graph), ``optimize()``s, flushes and closes it, and exits 0; the web then
swaps the copy in. The build holds this process's GIL, not the web's. Nothing imports this
module, so ``-m`` runs it fresh.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

from pipeline.vectors.edge_swap import ShardLayout


def _die_with_parent(parent: int) -> None:
    """Linux: end this build when the web process dies (PR_SET_PDEATHSIG), so a killed web
    leaves no orphan building a copy that its next start removes. The signal comes when the
    thread that started the child ends: the web's index maintainer lives as long as the web."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request took hold
        os._exit(3)


def parse(argv: list[str] | None = None) -> tuple[argparse.Namespace, ShardLayout]:
    """The command line ``ShardLayout.child_args`` wrote, and the layout it describes."""
    parser = argparse.ArgumentParser(description="Build the index of a copy of an Edge shard (the web swaps it in).")
    parser.add_argument("path")
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--payload-memory", default="pinned")
    parser.add_argument("--vector-codes", required=True)
    parser.add_argument("--vectors-on-disk", choices=("yes", "no"), required=True)
    parser.add_argument("--no-graph", action="store_true", help="a codes-only build (HNSW m=0)")
    parser.add_argument("--nice", type=int, default=0)
    parser.add_argument("--parent", type=int, default=0)
    args = parser.parse_args(argv)
    layout = ShardLayout(args.size, args.payload_memory, args.vector_codes, vectors_on_disk=args.vectors_on_disk == "yes",
                         graph=not args.no_graph)
    return args, layout


def main(argv: list[str] | None = None) -> int:
    args, layout = parse(argv)
    if args.parent:
        _die_with_parent(args.parent)
    if args.nice:
        os.nice(args.nice)
    import qdrant_edge as qe

    shard = qe.EdgeShard.load(args.path, layout.config(qe))
    shard.optimize()
    shard.flush()
    shard.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
