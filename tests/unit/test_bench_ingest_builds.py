"""The ingest benchmark's reading of the web's index-build log lines."""

import json
import threading
import time
from types import SimpleNamespace

from ops.bench.ingest import IndexBuilds
from pipeline.vectors import INDEX_BUILD_FINISHED, INDEX_BUILD_STARTED


def _line(message: str, **extra) -> str:
    return json.dumps({"level": "INFO", "logger": "pipeline.vectors.edge", "message": message, **extra}) + "\n"


def test_builds_are_counted_after_an_offset_and_only_one_begun_after_it_is_complete(tmp_path):
    log = tmp_path / "web.log"
    log.write_text(_line(INDEX_BUILD_STARTED, changes=900))
    builds = IndexBuilds(SimpleNamespace(data_dir=tmp_path))
    offset = builds.mark()
    with open(log, "a") as out:  # the build begun before the offset ends after it
        out.write(_line("GET /health 200") + _line(INDEX_BUILD_FINISHED, changes=900, seconds=2.5))
    assert builds.since(offset) == {"started": 0, "finished": 1, "seconds": 2.5, "complete": False}
    with open(log, "a") as out:
        out.write(_line(INDEX_BUILD_STARTED, changes=600) + _line(INDEX_BUILD_FINISHED, changes=600, seconds=1.25))
    assert builds.since(offset) == {"started": 1, "finished": 2, "seconds": 3.75, "complete": True}


def test_settle_waits_for_a_build_to_finish_and_not_at_all_when_none_starts(tmp_path):
    log = tmp_path / "web.log"
    log.write_text("")
    builds = IndexBuilds(SimpleNamespace(data_dir=tmp_path))
    assert builds.settle(builds.mark(), start_within=0.3, timeout=10) < 2  # none due: gives up soon

    offset = builds.mark()
    log.write_text(_line(INDEX_BUILD_STARTED, changes=500))

    def finish_later():
        time.sleep(0.8)
        with open(log, "a") as out:
            out.write(_line(INDEX_BUILD_FINISHED, changes=500, seconds=0.8))

    writer = threading.Thread(target=finish_later)
    writer.start()
    waited = builds.settle(offset, start_within=0.1, timeout=10)
    writer.join()
    assert 0.6 <= waited < 5  # waited for the running build, past start_within
