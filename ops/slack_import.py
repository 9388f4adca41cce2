"""Import a Slack export (a .zip or its folder) into mempipe over its REST API.

    python -m ops.slack_import EXPORT [--url URL] [--token TOKEN] [--workspace T0123] [--json]

Every message goes through ``POST /memory/batch`` (the public write path), 500 at a time;
a 429 (the pipeline is behind) is waited out as its ``Retry-After`` says. Safe to interrupt
and re-run: memories already stored unchanged are counted as duplicates, not written again.
URL and token default to this machine's settings (``PORT``, ``AUTOMEM_API_TOKEN``, or the
embedded default's ``tokens.json``).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
from tqdm import tqdm

from pipeline.config import Settings
from pipeline.slack.export import SlackExport
from pipeline.slack.importer import BatchOutcome, ImportSummary, day_file_count, import_export
from pipeline.slack.mapping import MappingRules


# How long the importer waits out 429s with no batch of this import accepted before it gives
# up: the pipeline is then not draining (no worker running, a stage failing), not just busy.
MAX_STALL_S = 600.0


class HttpBatchSink:
    """Sends a batch to POST /memory/batch; waits out 429s and retries transient failures.

    A 429 is waited out as told for as long as the pipeline keeps taking this import's
    batches: with the local model a 500-memory batch drains in seconds, and the in-flight
    batches take turns being admitted, so one batch may be refused for minutes while the
    import progresses (a fixed cap on refusals fails a large local import). The import
    gives up only when no batch has been accepted for ``max_stall_s``. Connection errors and
    5xx answers are retried ``max_attempts`` times with backoff.

    Each sending thread keeps one ``http.client`` connection alive (the importer keeps
    ``SLACK_IMPORT_IN_FLIGHT`` batches in flight, one per thread). The importer shares the
    machine with the service it feeds: stdlib ``http.client`` and orjson cost a fraction of
    the CPU per request of an httpx client with its JSON encoding (measured in
    docs/benchmarks-log.md, issue 6 session 14).
    """

    def __init__(self, url: str, headers: dict[str, str] | None = None, max_attempts: int = 30, sleep=time.sleep,
                 timeout: float = 120.0, max_stall_s: float = MAX_STALL_S, clock=time.monotonic):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self._https = parts.scheme == "https"
        self._host, self._port = parts.hostname, parts.port
        self._path = parts.path.rstrip("/") + "/memory/batch"
        self._headers = {**(headers or {}), "Content-Type": "application/json", "Accept": "application/json"}
        self._timeout = timeout
        self._max_attempts = max_attempts
        self._sleep = sleep
        self._max_stall_s = max_stall_s
        self._clock = clock
        self._last_accepted = clock()  # when a batch of this import was last taken (any thread)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[http.client.HTTPConnection] = []
        self.throttled_seconds = 0.0

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            conn = cls(self._host, self._port, timeout=self._timeout)
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def _drop_connection(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _post(self, body: bytes) -> tuple[int, dict[str, str], bytes]:
        conn = self._connection()
        try:
            conn.request("POST", self._path, body=body, headers=self._headers)
            response = conn.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException):
            self._drop_connection()  # a fresh connection on the next attempt
            raise
        if response.will_close:
            self._drop_connection()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, data

    def send(self, bodies: list[dict[str, Any]]) -> BatchOutcome:
        delay = 0.5
        payload = orjson.dumps({"memories": bodies})
        failures = 0
        while True:
            try:
                status, headers, data = self._post(payload)
            except (OSError, http.client.HTTPException) as exc:
                failures += 1
                if failures >= self._max_attempts:
                    raise RuntimeError(f"mempipe unreachable: {exc}") from exc
                self._sleep(delay)
                delay = min(delay * 2, 10.0)
                continue
            if status == 429:
                stalled = self._clock() - self._last_accepted
                if stalled > self._max_stall_s:
                    raise RuntimeError(f"POST /memory/batch refused (429) and no batch accepted for {stalled:.0f} s: "
                                       "the pipeline is not draining (are the workers running?)")
                wait = float(headers.get("retry-after") or 1)
                self.throttled_seconds += wait
                self._sleep(wait)
                continue
            if status in (502, 503, 504):
                failures += 1
                if failures >= self._max_attempts:
                    raise RuntimeError(f"POST /memory/batch answered {status} {failures} times in a row")
                self._sleep(delay)
                delay = min(delay * 2, 10.0)
                continue
            if status not in (201, 207):
                raise RuntimeError(f"POST /memory/batch answered {status}: {data[:300].decode(errors='replace')}")
            self._last_accepted = self._clock()
            body = orjson.loads(data)
            errors = [r["message"] for r in body["results"] if r["status"] == "error"]
            return BatchOutcome(body["accepted_count"], body["unchanged_count"], body["failed_count"], errors)

    def close(self) -> None:
        with self._lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            conn.close()


def _default_token(settings: Settings) -> str | None:
    if settings.automem_api_token:
        return settings.automem_api_token
    tokens = settings.data_dir / "tokens.json"
    return json.loads(tokens.read_text()).get("AUTOMEM_API_TOKEN") if tokens.exists() else None


def run_import(
    export_path: str, url: str, token: str | None, settings: Settings, *,
    workspace: str | None = None, batch_size: int | None = None, include_noise: bool = False, show_progress: bool = True,
) -> ImportSummary:
    rules = MappingRules(
        noise_subtypes=frozenset() if include_noise else settings.slack_noise_subtypes,
        content_max_chars=settings.memory_content_hard_limit,
    )
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    sink = HttpBatchSink(url, headers)
    with SlackExport(export_path, settings.slack_export_max_member_bytes, settings.slack_export_max_total_bytes) as export:
        bar = tqdm(total=day_file_count(export), unit="file", desc="slack import", disable=not show_progress,
                   file=sys.stderr, dynamic_ncols=True)

        def progress(files_done: int, summary: ImportSummary) -> None:
            bar.update(files_done - bar.n)
            elapsed = bar.format_dict["elapsed"] or 1e-9
            bar.set_postfix(msgs=summary.messages, per_s=f"{summary.messages / elapsed:,.0f}", refresh=False)

        try:
            return import_export(export, sink, rules, batch_size=batch_size or settings.slack_import_batch_size,
                                 workspace=workspace, progress=progress, in_flight=settings.slack_import_in_flight)
        finally:
            bar.close()
            sink.close()


def print_summary(summary: ImportSummary, stream=sys.stdout) -> None:
    d = summary.as_dict()
    print(f"workspace {d['workspace']}: {d['messages']} messages in {d['conversations']} conversations, {d['seconds']} s "
          f"({d['messages_per_second']} msg/s){'  [interrupted]' if d['interrupted'] else ''}", file=stream)
    print(f"  imported   {d['imported']}", file=stream)
    print(f"  duplicates {d['duplicates']}  (already stored unchanged)", file=stream)
    print(f"  failed     {d['failed']}", file=stream)
    print(f"  skipped    {sum(d['skipped'].values())}", file=stream)
    for reason, count in d["skipped"].items():
        print(f"    {reason:<28} {count}", file=stream)
    if d["non_message_files"]:
        print(f"  non-message files (canvases, ...) not read: {d['non_message_files']}", file=stream)
    print(f"  reconciles: {d['reconciles']}", file=stream)
    for error in d["errors"]:
        print(f"  error: {error}", file=stream)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.slack_import", description=__doc__.splitlines()[0])
    parser.add_argument("export", help="a Slack export: the .zip or its unpacked folder")
    parser.add_argument("--url", help="mempipe API base URL (default: http://HOST:PORT from settings)")
    parser.add_argument("--token", help="API token (default: AUTOMEM_API_TOKEN, or the embedded default's)")
    parser.add_argument("--workspace", help="workspace id for memory ids (default: the export's team id)")
    parser.add_argument("--batch-size", type=int, help="memories per request (default SLACK_IMPORT_BATCH_SIZE)")
    parser.add_argument("--include-noise", action="store_true", help="also import joins, topic changes, ...")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args(argv)
    settings = Settings()
    url = args.url or f"http://{settings.host}:{settings.port}"
    token = args.token or os.environ.get("AUTOMEM_API_TOKEN") or _default_token(settings)
    if not Path(args.export).exists():
        parser.error(f"{args.export}: no such file or folder")
    summary = run_import(args.export, url, token, settings, workspace=args.workspace, batch_size=args.batch_size,
                         include_noise=args.include_noise, show_progress=not args.no_progress)
    if args.json:
        print(json.dumps(summary.as_dict()))
    else:
        print_summary(summary)
    return 130 if summary.interrupted else (1 if summary.failed else 0)


if __name__ == "__main__":
    sys.exit(main())
