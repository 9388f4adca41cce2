"""The Edge HNSW build outside the web process: a child builds a copy, the web swaps it in.

The web's side (copy, child, catch-up, swap, recovery); the child is pipeline.vectors.edge_build.

``qdrant_edge`` holds Python's GIL for a whole ``optimize()`` (minutes at 100k points), so a
build inside the web process stops it answering anything (docs/benchmarks-log.md, "The Edge
build's stall"). With ``EDGE_BUILD_IN_CHILD`` the store (pipeline.vectors.edge) instead:

1. copies its flushed shard to ``<shard>.build`` while vector writes wait (searches go on), and
   journals the id of every point written from then on;
2. runs ``python -m pipeline.vectors.edge_build <shard>.build`` (a module nothing else imports), niced
   as the other background processes, which opens the copy, builds, flushes and closes it;
3. when the child has exited 0, renames the copy to the shard's next generation directory
   (pipeline.vectors.shard_generations), reads its files into the page cache
   (``warm_page_cache``) and opens it beside the live shard, which goes on answering; copies
   the journaled points' current state into it while the web goes on (in rounds, when there
   are many), then with writes paused copies the rest and points the shard's link at it, and
   with searches paused (only for the switch of one reference) makes it the live shard. The
   old shard is retired after in short calls (``retire_shard``), and its directory removed.

A start (``recover``) removes a left-over ``.build`` or ``.discard``; shard_generations removes
a generation that never went live. Earlier versions swapped by renaming directories: a
left-over ``.old`` from one of their swaps is put back over the live directory (it is the
shard as it was closed, complete; only the build is lost). Nothing here touches the shard's
lock file (``<shard>.lock``, beside the link), so the owner keeps it across the swap.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable

from pipeline.processes import end_process
from pipeline.settings_groups import EDGE_VECTOR_CODES, EDGE_VECTORS_ON_DISK

log = logging.getLogger(__name__)

BUILD = ".build"  # the copy the child builds
OLD = ".old"  # an earlier version's swap: the live shard during its renames
DISCARD = ".discard"  # an earlier version's swap: the old shard once the new one was live
# Points read from the live shard and written to the built one per step of the catch-up: each
# step holds the GIL for a few milliseconds (a retrieve and an upsert of this many points).
CATCH_UP_CHUNK = 256
# Up to this many journaled points are copied with writes paused (about 1 ms per 20 points);
# past it they are copied while the web goes on writing, in rounds, until fewer are left.
CATCH_UP_PAUSED_MAX = 1_000
CATCH_UP_ROUNDS = 5
# Bytes per read when a shard is read into the page cache (warm_page_cache: before a swap, at a start).
WARM_CHUNK = 1 << 20
# How long a stop waits for a child it has asked to end before killing it.
CHILD_STOP_S = 5.0
# Int8 codes (ShardLayout): the share of each dimension's values the code range covers (the
# rest are clipped), and how many candidates per requested hit are rescored on float32 vectors
# (ops.bench.probe_edge_quantized: recall@10 against exact search 1.0 with 2, 0.93 with 1).
CODES_QUANTILE = 0.99
CODES_OVERSAMPLING = 2.0
# The HNSW graph of a build past the plain size: Qdrant's defaults, written out because a shard
# keeps the last HNSW configuration it was opened with (a codes-only build's ``m=0`` included),
# and these values are what a shard built before ShardLayout said them already has (checked:
# opening such a shard with them rebuilds nothing).
HNSW_M = 16
HNSW_EF_CONSTRUCT = 100
HNSW_FULL_SCAN_KB = 10_000


@dataclass(frozen=True)
class ChildBuildOptions:
    """How a build in a child process runs (EDGE_BUILD_IN_CHILD and friends)."""

    nice: int = 0  # steps below the web's priority (EMBEDDED_BACKGROUND_NICE)
    retry_s: float = 600.0  # after a failed build, the least time before the next one (EDGE_BUILD_RETRY_S)
    python: str = sys.executable


def sibling(path: str, suffix: str) -> str:
    return path.rstrip("/") + suffix


@dataclass(frozen=True)
class ShardLayout:
    """How the shard is configured: the web opens it so, and a build's child with its own ``graph``.

    ``vector_codes`` (EDGE_VECTOR_CODES): ``int8`` keeps a one-byte-a-dimension copy of every
    vector in RAM beside the float32 one, made by each index build; the HNSW build and walk
    compare codes, and a search rescores its best ``limit × CODES_OVERSAMPLING`` candidates on
    the float32 vectors. Segments never built have no codes.

    ``vectors_on_disk`` (EDGE_VECTORS_ON_DISK): the vectors and the codes stay in memory-mapped
    files, not copied into the heap when a segment opens (most of a built shard's open time).

    ``graph``: whether a build makes the HNSW graph. Without it (``m=0``, a codes-only build,
    below EDGE_PLAIN_MAX_POINTS) the build only writes the codes: a linear pass, and a search
    scans the codes instead of the float32 vectors. A graph build rebuilds codes-only segments
    with their graph (the shard's HNSW configuration changed).
    """

    size: int
    payload_memory: str = "pinned"
    vector_codes: str = EDGE_VECTOR_CODES
    vectors_on_disk: bool = EDGE_VECTORS_ON_DISK
    graph: bool = True

    def config(self, qe: Any) -> Any:
        codes = (qe.ScalarQuantizationConfig(qe.ScalarType.Int8, quantile=CODES_QUANTILE,
                                             always_ram=not self.vectors_on_disk)
                 if self.vector_codes == "int8" else None)
        hnsw = qe.HnswIndexConfig(m=HNSW_M if self.graph else 0, ef_construct=HNSW_EF_CONSTRUCT,
                                  full_scan_threshold=HNSW_FULL_SCAN_KB)
        return qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=self.size, distance=qe.Distance.Cosine,
                                                         quantization_config=codes, hnsw_config=hnsw,
                                                         on_disk=self.vectors_on_disk),
                             payload_memory=getattr(qe.Memory, self.payload_memory.capitalize()))

    def codes_only(self) -> ShardLayout:
        """This layout for a codes-only build (no HNSW graph)."""
        return replace(self, graph=False)

    def search_params(self, qe: Any) -> Any:
        """What every dense search asks for (None: the engine's defaults)."""
        if self.vector_codes != "int8":
            return None
        return qe.SearchParams(quantization=qe.QuantizationSearchParams(rescore=True, oversampling=CODES_OVERSAMPLING))

    def child_args(self) -> list[str]:
        return (["--size", str(self.size), "--payload-memory", self.payload_memory, "--vector-codes", self.vector_codes,
                 "--vectors-on-disk", "yes" if self.vectors_on_disk else "no"] + ([] if self.graph else ["--no-graph"]))


class StepTimer:
    """Milliseconds between successive marks, by the name of the step each mark ends."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._last = clock()
        self.milliseconds: dict[str, float] = {}

    def mark(self, step: str) -> float:
        """End ``step`` now; returns its seconds."""
        now = self._clock()
        seconds, self._last = now - self._last, now
        self.milliseconds[step] = round(seconds * 1000, 1)
        return seconds


def recover(path: str) -> list[str]:
    """Undo what an interrupted build or swap left beside the shard; returns what was done.
    Call it holding the shard's lock (pipeline.vectors.shard_lock), before opening the shard."""
    done = []
    for suffix in (BUILD, DISCARD):
        leftover = sibling(path, suffix)
        if os.path.lexists(leftover):
            shutil.rmtree(leftover, ignore_errors=True)
            done.append(f"removed {leftover}")
    old = sibling(path, OLD)
    if os.path.isdir(old):  # a swap was interrupted: the old shard is complete, the live dir may not be
        if os.path.islink(path):
            os.unlink(path)
        elif os.path.lexists(path):
            shutil.rmtree(path)
        os.rename(old, path)
        done.append(f"restored {path} from {old}")
    for line in done:
        log.warning("Edge shard: an interrupted index build was cleaned up: %s", line)
    return done


def copy_shard(source: str, target: str) -> None:
    """Copy a (flushed) shard directory. ``cp -r`` in a subprocess: the web's GIL is free while it
    runs (shutil.copytree holds it between the copy syscalls; ops.bench.probe_edge_build measures both)."""
    if os.path.lexists(target):
        shutil.rmtree(target)
    if shutil.which("cp"):
        subprocess.run(["cp", "-r", "--", source, target], check=True, stdin=subprocess.DEVNULL)
    else:
        shutil.copytree(source, target)


def available_memory() -> int | None:
    """The kernel's estimate of memory available without swapping (``MemAvailable``), or None off Linux."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


# What every search walks (the HNSW graph, the int8 codes, the payload indexes a filter reads)
# is read first; the float32 vectors (a few rows a search, for rescoring) and the payloads
# (the hits') after; the write-ahead log not at all (the open has read it). Names as Qdrant
# lays a segment out: a name it changes is only read in another order.
_WARM_FIRST = ("vector_index", "quantized", "payload_index")


def _warm_order(relative: str) -> int | None:
    """0: read first, 1: then, None: not read (``relative`` to the shard's directory)."""
    parts = relative.split(os.sep)
    if parts[0] == "wal":
        return None
    return 0 if any(part.startswith(_WARM_FIRST) for part in parts) else 1


def warm_page_cache(path: str, chunk: int = WARM_CHUNK, stop: Callable[[], bool] = lambda: False,
                    available: Callable[[], int | None] = available_memory) -> int:
    """Read the shard's files under ``path`` once, so that the page cache holds them; returns the bytes read.

    Edge drops a shard's files from the page cache when it closes it (``posix_fadvise(DONTNEED)``
    on each): the child's build ends with a close, as do a catch-up round and the last stop.
    Opened as it is, the shard answers its first searches by reading their codes from disk a
    page fault at a time while the caller holds the GIL (~0.6 s at 100k points), every recall
    waiting behind them. Read here whole, what they walk first first (_WARM_FIRST), with no lock
    held, the same files take a fraction of that, and the GIL is free during each read. Skipped
    (0) when they are larger than half the memory available, where reading them would only push
    other pages out; ends early once ``stop()`` says so.
    """
    files = []  # (read order, path, size)
    for root, _dirs, names in os.walk(path):
        for name in names:
            file = os.path.join(root, name)
            order = _warm_order(os.path.relpath(file, path))
            try:
                if order is not None:
                    files.append((order, file, os.path.getsize(file)))
            except OSError:
                continue  # gone already: a file the search will not read
    room = available()
    if room is not None and sum(size for _, _, size in files) > room // 2:
        return 0
    buffer = memoryview(bytearray(chunk))
    total = 0
    for _order, file, _size in sorted(files, key=lambda entry: entry[0]):
        try:
            with open(file, "rb", buffering=0) as handle:
                while not stop() and (read := handle.readinto(buffer)):
                    total += read
        except OSError:
            continue
        if stop():
            break
    return total


def _child_env() -> dict[str, str]:
    """The web's environment, with the directory this package was imported from first on the path."""
    import pipeline

    root = os.path.dirname(os.path.dirname(os.path.abspath(pipeline.__file__)))
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")}


class ChildBuild:
    """One build of ``<shard>.build`` in a child process."""

    def __init__(self, path: str, layout: ShardLayout, options: ChildBuildOptions):
        self.path = path
        self.layout = layout
        self.build_path = sibling(path, BUILD)
        self.started = time.monotonic()
        args = [options.python, "-m", "pipeline.vectors.edge_build", self.build_path, *layout.child_args(),
                "--nice", str(options.nice), "--parent", str(os.getpid())]
        # No preexec_fn (unsafe in a threaded process): the child nices itself. Its stderr is
        # the web's, so a failing build's traceback lands in the web's log. It imports this
        # very code, wherever the web was started from.
        self._process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=_child_env())

    @property
    def pid(self) -> int:
        return self._process.pid

    def poll(self) -> int | None:
        """The child's exit status, or None while it runs."""
        return self._process.poll()

    def stop(self) -> None:
        """End the child (asked, then killed) and remove its copy."""
        end_process(self._process, CHILD_STOP_S)
        self.discard()

    def discard(self) -> None:
        shutil.rmtree(self.build_path, ignore_errors=True)


def read_points(source: Any, ids: list) -> tuple[list, list]:
    """``ids``' current state in ``source``: (records with vector and payload as stored, ids absent)."""
    records = source.retrieve(ids, with_payload=True, with_vector=True)
    found = {str(r.id) for r in records}
    return records, [i for i in ids if str(i) not in found]


def apply_points(target: Any, qe: Any, records: list, gone: list) -> None:
    """Write what ``read_points`` read: the present points upserted, the absent ones deleted."""
    if records:
        target.update(qe.UpdateOperation.upsert_points([qe.Point(r.id, _dense(r.vector), r.payload) for r in records]))
    if gone:
        target.update(qe.UpdateOperation.delete_points(gone))


def copy_points(source: Any, target: Any, qe: Any, ids: Iterable[Any], before_step: Callable[[], Any] = lambda: None,
                read: Callable[[Callable[[], Any]], Any] = lambda call: call()) -> int:
    """Make ``target`` hold ``ids``' current state in ``source``, in steps of CATCH_UP_CHUNK;
    returns the points copied. ``read`` runs each read of ``source`` (the store passes its guard)."""
    ids = list(ids)
    for start in range(0, len(ids), CATCH_UP_CHUNK):
        chunk = ids[start:start + CATCH_UP_CHUNK]
        before_step()
        records, gone = read(lambda: read_points(source, chunk))
        apply_points(target, qe, records, gone)
    return len(ids)


def retire_shard(shard: Any, qe: Any, indexed_fields: Iterable[str], before_step: Callable[[], Any],
                 steps: StepTimer) -> None:
    """Close a shard that is no longer live, in calls short enough for the web's requests to
    get their turn between them (``before_step`` before each; ``steps`` times them).

    Closing a shard frees what its plain segments hold in the heap: the payload indexes
    (keyword maps, the text index's postings) of every point written since the last build,
    up to ``EDGE_OPTIMIZE_IMPORT_MAX_CHANGES`` after an import, in one call holding the GIL
    (docs/benchmarks-log.md, "the swap without a pause"). Dropped one field at a time first,
    each index is freed in a call of its own, and the close is left the rest.
    """
    before_step()
    shard.flush()  # the writes of its last moments: the close would flush them, in the same call
    steps.mark("flush_old")
    for field in indexed_fields:
        before_step()
        shard.update(qe.UpdateOperation.delete_field_index(field))
    steps.mark("drop_old_indexes")
    before_step()
    shard.close()
    steps.mark("close_old")


def _dense(vector: Any) -> list[float]:
    if isinstance(vector, dict):  # Edge may return a name -> vector map
        vector = vector.get("") if "" in vector else next(iter(vector.values()))
    return list(vector)
