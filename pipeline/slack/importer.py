"""Importing a Slack export through the public write path, batch by batch.

The importer only reads and maps; a ``BatchSink`` delivers each batch (over HTTP to
``POST /memory/batch`` from the CLI, in-process from the admin endpoint) and reports what
happened to every item. Interrupting is safe: everything sent was durably queued, and a
re-run finds it stored unchanged (counted as duplicates) instead of writing it again.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from pipeline.slack.export import SlackExport
from pipeline.slack.mapping import Channel, MappingRules, Skip, map_message


@dataclass
class BatchOutcome:
    accepted: int = 0
    unchanged: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)


class BatchSink(Protocol):
    def send(self, bodies: list[dict[str, Any]]) -> BatchOutcome: ...


@dataclass
class ImportSummary:
    workspace: str = ""
    messages: int = 0
    imported: int = 0
    duplicates: int = 0
    failed: int = 0
    skipped: Counter = field(default_factory=Counter)
    non_message_files: int = 0
    conversations: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)
    interrupted: bool = False

    @property
    def reconciles(self) -> bool:
        """Every message read is accounted for exactly once."""
        return self.messages == self.imported + self.duplicates + self.failed + sum(self.skipped.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "workspace": self.workspace,
            "messages": self.messages,
            "imported": self.imported,
            "duplicates": self.duplicates,
            "failed": self.failed,
            "skipped": dict(sorted(self.skipped.items())),
            "non_message_files": self.non_message_files,
            "conversations": self.conversations,
            "seconds": round(self.seconds, 2),
            "messages_per_second": round(self.messages / self.seconds, 1) if self.seconds else None,
            "reconciles": self.reconciles,
            "interrupted": self.interrupted,
            "errors": self.errors[:20],
        }


Progress = Callable[[int, ImportSummary], None]  # (day files done, summary so far)


def day_file_count(export: SlackExport) -> int:
    from pipeline.slack.export import DAY_FILE

    return sum(1 for files in export.folders().values() for name in files if DAY_FILE.match(name))


def import_export(
    export: SlackExport,
    sink: BatchSink,
    rules: MappingRules,
    *,
    batch_size: int = 500,
    workspace: str | None = None,
    progress: Progress | None = None,
    in_flight: int = 1,
) -> ImportSummary:
    """Read, map and send; ``in_flight`` batches may be on their way at once (the sink must
    then be thread-safe), so reading the next day files overlaps the server's work."""
    directory, conversations, team = export.directory()
    summary = ImportSummary(workspace=workspace or team or export.path.stem, conversations=len(conversations))
    started = time.monotonic()
    sender = _Sender(sink, summary, batch_size, in_flight)
    counts: dict[str, int] = {}
    try:
        files = _map_and_send(export, conversations, directory, rules, sender, counts, progress)
        sender.flush()
        sender.drain()
        if progress and files:
            progress(files, summary)
    except KeyboardInterrupt:
        summary.interrupted = True
        sender.abandon()
    finally:
        sender.close()
        summary.non_message_files = counts.get("non_message_files", 0)
        summary.seconds = time.monotonic() - started
    return summary


def _map_and_send(export: SlackExport, conversations, directory, rules: MappingRules, sender: "_Sender",
                  counts: dict[str, int], progress: Progress | None) -> int:
    """Map every message of ``conversations`` and hand the memories to ``sender``; reports
    progress as each day file is finished and returns how many day files were read."""
    summary = sender.summary
    files_done = 0
    last_file = None
    for conversation in conversations:
        channel = Channel(conversation.id, conversation.name)
        for item in export.messages(conversation, counts):
            if (conversation.folder, item.day_file) != last_file:
                if last_file is not None:
                    files_done += 1
                    if progress:
                        progress(files_done, summary)
                last_file = (conversation.folder, item.day_file)
            summary.messages += 1
            mapped = map_message(item.message, summary.workspace, channel, directory, rules)
            if isinstance(mapped, Skip):
                summary.skipped[mapped.reason] += 1
                continue
            sender.add(mapped)
    return files_done + 1 if last_file is not None else 0


class _Sender:
    """Gathers memories into batches and sends them, up to ``in_flight`` batches on their way
    at once, counting each batch's outcome into the summary."""

    def __init__(self, sink: BatchSink, summary: ImportSummary, batch_size: int, in_flight: int):
        self.summary = summary
        self._sink = sink
        self._batch_size = batch_size
        self._in_flight = in_flight
        self._batch: list[dict[str, Any]] = []
        self._pool = ThreadPoolExecutor(in_flight, thread_name_prefix="import-send") if in_flight > 1 else None
        self._pending: deque[Future] = deque()

    def add(self, memory: dict[str, Any]) -> None:
        self._batch.append(memory)
        if len(self._batch) >= self._batch_size:
            self.flush()

    def flush(self) -> None:
        if not self._batch:
            return
        if self._pool is None:
            self._account(self._sink.send(list(self._batch)))
        else:
            while len(self._pending) >= self._in_flight:
                self._account(self._pending.popleft().result())
            self._pending.append(self._pool.submit(self._sink.send, list(self._batch)))
        self._batch.clear()

    def drain(self) -> None:
        while self._pending:
            self._account(self._pending.popleft().result())

    def abandon(self) -> None:
        """On an interrupt: drop the unsent batch, wait for and count the ones on their way."""
        # What was mapped but not yet sent is neither imported nor skipped: don't count it.
        self.summary.messages -= len(self._batch)
        self._batch.clear()
        for future in self._pending:  # batches already on their way are waited for and counted
            try:
                self._account(future.result())
            except Exception as exc:  # noqa: BLE001 - reported, the re-run picks them up
                self.summary.errors.append(str(exc))
        self._pending.clear()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def _account(self, outcome: BatchOutcome) -> None:
        summary = self.summary
        summary.imported += outcome.accepted
        summary.duplicates += outcome.unchanged
        summary.failed += outcome.failed
        summary.errors += outcome.errors[: max(0, 20 - len(summary.errors))]
