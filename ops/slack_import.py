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
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from tqdm import tqdm

from pipeline.config import Settings
from pipeline.slack.export import SlackExport
from pipeline.slack.importer import BatchOutcome, ImportSummary, day_file_count, import_export
from pipeline.slack.mapping import MappingRules


class HttpBatchSink:
    """Sends a batch to POST /memory/batch; waits out 429s and retries transient failures."""

    def __init__(self, client: httpx.Client, max_attempts: int = 30, sleep=time.sleep):
        self._client = client
        self._max_attempts = max_attempts
        self._sleep = sleep
        self.throttled_seconds = 0.0

    def send(self, bodies: list[dict[str, Any]]) -> BatchOutcome:
        delay = 0.5
        for attempt in range(1, self._max_attempts + 1):
            try:
                response = self._client.post("/memory/batch", json={"memories": bodies})
            except httpx.TransportError as exc:
                if attempt == self._max_attempts:
                    raise RuntimeError(f"mempipe unreachable: {exc}") from exc
                self._sleep(delay)
                delay = min(delay * 2, 10.0)
                continue
            if response.status_code == 429:
                wait = float(response.headers.get("retry-after") or 1)
                self.throttled_seconds += wait
                self._sleep(wait)
                continue
            if response.status_code in (502, 503, 504):
                self._sleep(delay)
                delay = min(delay * 2, 10.0)
                continue
            if response.status_code not in (201, 207):
                raise RuntimeError(f"POST /memory/batch answered {response.status_code}: {response.text[:300]}")
            body = response.json()
            errors = [r["message"] for r in body["results"] if r["status"] == "error"]
            return BatchOutcome(body["accepted_count"], body["unchanged_count"], body["failed_count"], errors)
        raise RuntimeError(f"POST /memory/batch still refused after {self._max_attempts} attempts")


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
    with SlackExport(export_path) as export, httpx.Client(base_url=url, headers=headers, timeout=120) as client:
        bar = tqdm(total=day_file_count(export), unit="file", desc="slack import", disable=not show_progress,
                   file=sys.stderr, dynamic_ncols=True)

        def progress(files_done: int, summary: ImportSummary) -> None:
            bar.update(files_done - bar.n)
            elapsed = bar.format_dict["elapsed"] or 1e-9
            bar.set_postfix(msgs=summary.messages, per_s=f"{summary.messages / elapsed:,.0f}", refresh=False)

        try:
            return import_export(export, HttpBatchSink(client), rules, batch_size=batch_size or settings.slack_import_batch_size,
                                 workspace=workspace, progress=progress, in_flight=settings.slack_import_in_flight)
        finally:
            bar.close()


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
