"""The web's own CPU per ``POST /memory``: the fast path against FastAPI's routing.

    python -m ops.bench.write_route [--writes 2000] [--rounds 4]

Drives the app's ASGI stack in-process (no uvicorn, no sockets, no workers: persist messages
only queue on a real broker), 8 writes at a time, and reads the process's CPU per request,
for two builds of the same app: as shipped (``api.single_write.SingleWriteFastPath``
answers the route) and with that middleware removed, so the request goes through FastAPI's
exception middleware, router and dependency solving to the same function. Each round runs
each build in a fresh process (one Edge shard and one metrics registry per process), the
two alternating so a changing load hits both alike; compare the medians. Prints a table and
writes ``ops/bench/results/bench_write_route.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import orjson

from ops.bench.stack import API_TOKEN, ROOT, Servers, Stack

RESULTS = Path(__file__).resolve().parent / "results"
CONCURRENCY = 8
VARIANTS = ("fast path", "router")


def _scope(body: bytes) -> dict:
    headers = [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {API_TOKEN}".encode()),
               (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
            "path": "/memory", "raw_path": b"/memory", "query_string": b"wait=false", "root_path": "",
            "headers": headers, "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000), "state": {}}


async def _post(app, i: int) -> int:
    body = orjson.dumps({"content": f"single write {i}: {' '.join(str(i * k % 977) for k in range(12))}",
                         "tags": ["bench:single"]})
    delivered = False
    status = []

    async def receive():
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # no disconnect while the route works

    async def send(message):
        if message["type"] == "http.response.start":
            status.append(message["status"])

    await app(_scope(body), receive, send)
    return status[0]


class _Lifespan:
    """Runs an ASGI app's lifespan (services, write path) for the length of a ``with``."""

    def __init__(self, app):
        self.app, self.inbox, self.outbox = app, asyncio.Queue(), asyncio.Queue()

    async def __aenter__(self):
        self.task = asyncio.create_task(self.app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}},
                                                 self.inbox.get, self.outbox.put))
        await self.inbox.put({"type": "lifespan.startup"})
        message = await self.outbox.get()
        if message["type"] != "lifespan.startup.complete":
            raise RuntimeError(f"app did not start: {message}")
        return self

    async def __aexit__(self, *exc):
        await self.inbox.put({"type": "lifespan.shutdown"})
        await self.task


def _build(variant: str):
    from api.app import create_app
    from api.single_write import SingleWriteFastPath

    app = create_app()
    if variant == "router":
        app.user_middleware = [m for m in app.user_middleware if m.cls is not SingleWriteFastPath]
    return app


async def _measure(variant: str, writes: int) -> float:
    """CPU ms per write of one build of the app, in this process."""
    app = _build(variant)
    async with _Lifespan(app):
        await asyncio.gather(*(_post(app, k) for k in range(CONCURRENCY)))  # warm-up: builds the stack
        started = time.process_time()
        for start in range(CONCURRENCY, writes + CONCURRENCY, CONCURRENCY):
            codes = await asyncio.gather(*(_post(app, start + k) for k in range(CONCURRENCY)))
            if set(codes) != {202}:
                raise RuntimeError(f"{variant}: unexpected statuses {set(codes)}")
        return (time.process_time() - started) * 1000 / writes


def _run_child(servers: Servers, variant: str, writes: int) -> float:
    """One variant in a fresh process (its own Edge shard, its own metrics registry)."""
    stack = Stack.create(servers, EMBEDDING_PROVIDER="hash", EDGE_OPTIMIZE_INTERVAL_S="3600",
                         BACKPRESSURE_MAX_PENDING="100000000", WEB_WORKER_QUEUES="none")
    result = subprocess.run([sys.executable, "-m", "ops.bench.write_route", "--child", variant, "--writes", str(writes)],
                            cwd=ROOT, env=stack.env(), capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"{variant} run failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])["cpu_ms_per_write"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.write_route", description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=2000, help="writes per variant per round")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps({"cpu_ms_per_write": asyncio.run(_measure(args.child, args.writes))}))
        return 0
    servers = Servers.start(Path(tempfile.mkdtemp(prefix="mempipe-route-")) / "servers")
    cpu: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    try:
        for _ in range(args.rounds):
            for variant in VARIANTS:
                cpu[variant].append(round(_run_child(servers, variant, args.writes), 3))
                print(f"... {variant}: {cpu[variant][-1]} ms", file=sys.stderr, flush=True)
    finally:
        servers.stop()
    medians = {variant: round(statistics.median(values), 3) for variant, values in cpu.items()}
    print("\nCPU ms per POST /memory?wait=false (the app in one process: its middleware, route, redis client, thread pool)")
    print(f"{'variant':<10} {'median':>7}  rounds")
    for variant, values in cpu.items():
        print(f"{variant:<10} {medians[variant]:>7}  {' '.join(f'{v:.3f}' for v in values)}")
    ratio = round(medians["fast path"] / medians["router"], 2)
    print(f"fast path / router = {ratio}")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "bench_write_route.json"
    out.write_text(json.dumps({"when": datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ"),
                               "args": {"writes": args.writes, "rounds": args.rounds},
                               "cpu_ms_per_write": cpu, "median": medians, "fast_over_router": ratio}, indent=2))
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
