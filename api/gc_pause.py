"""The web's garbage collector: what it holds since start-up is never traversed again.

CPython's full (generation 2) collection walks every tracked object the process holds, with the
GIL held: in the web, the libraries, the model and the app, a few hundred thousand objects.
While an import flows the web allocates fast (500-memory batches, vector messages decoded), so
full collections come every few seconds, and each stopped every thread, recall included, for
74-335 ms at load 3-4 on 2 cores (issue 21; docs/benchmarks-log.md). ``gc.freeze()`` after
start-up moves everything alive then into a permanent generation that collections skip: a full
collection walks only what was allocated since.
"""

from __future__ import annotations

import gc
import logging

log = logging.getLogger(__name__)


def freeze_start_up_objects() -> int:
    """Collect once, then exempt every object alive now from later collections; returns how many."""
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    log.info("garbage collector: start-up objects frozen", extra={"objects": frozen})
    return frozen
