"""How many items the next call into a GIL-holding binding may take, from how long calls took.

``qdrant_edge`` holds the GIL for the whole of a call, so a call that searches a batch holds
every other thread of the process (a recall, ``/health``) for as long as the batch takes. What
one query costs varies a hundredfold with the shard's state (a scan of tens of thousands of
unindexed points against an HNSW walk), so a fixed batch size is either slow to get through or
long to wait for. The pacer keeps a running estimate of the seconds per item and sizes each call
to about ``target_s``; the caller's own upper bound covers a change it cannot have measured
yet (the first call, or a shard that grew between calls).
"""

from __future__ import annotations


class CallPacer:
    """Sizes calls to about ``target_s`` each from the seconds per item of the calls before."""

    def __init__(self, target_s: float, smoothing: float = 0.5):
        if target_s <= 0:
            raise ValueError("target_s must be positive")
        if not 0 < smoothing <= 1:
            raise ValueError("smoothing must be in (0, 1]")
        self._target_s = target_s
        self._smoothing = smoothing
        self._seconds_per_item: float | None = None

    @property
    def seconds_per_item(self) -> float | None:
        return self._seconds_per_item

    def size(self, upper: int) -> int:
        """Items for the next call: at most ``upper``, at least 1."""
        upper = max(1, upper)
        if not self._seconds_per_item:
            return upper
        return max(1, min(upper, int(self._target_s / self._seconds_per_item)))

    def record(self, items: int, seconds: float) -> None:
        """A call of ``items`` items took ``seconds``."""
        if items <= 0 or seconds < 0:
            return
        measured = seconds / items
        if self._seconds_per_item is None:
            self._seconds_per_item = measured
        else:
            # smoothed, so one call slowed by the machine does not shrink the next ones for long
            self._seconds_per_item += self._smoothing * (measured - self._seconds_per_item)
