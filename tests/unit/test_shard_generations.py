"""The Edge shard's generations behind its link: what a start finds and leaves
(pipeline.vectors.shard_generations). The real swap is in tests/integration/test_edge_build.py."""

from __future__ import annotations

import os

from pipeline.vectors import shard_generations as generations
from pipeline.vectors import shard_lock
from tests.marked_dirs import marked_dir, marker


def test_a_shard_from_before_generations_becomes_generation_zero_behind_a_relative_link(tmp_path):
    shard = str(tmp_path / "memories")
    marked_dir(shard, "legacy")
    assert generations.adopt(shard)
    assert os.path.islink(shard) and os.readlink(shard) == "memories.g0"  # relative: the data dir may move
    assert marker(shard) == "legacy" and generations.live_number(shard) == 0
    assert not generations.adopt(shard)  # once
    assert generations.recover(shard) == [] and sorted(os.listdir(tmp_path)) == ["memories", "memories.g0"]


def test_the_next_generation_goes_past_every_one_on_disk_and_the_link_moves_to_it(tmp_path):
    shard = str(tmp_path / "memories")
    marked_dir(generations.generation_dir(shard, 0), "zero")
    generations.point_to(shard, generations.generation_dir(shard, 0))
    marked_dir(generations.generation_dir(shard, 4), "a build that never went live")
    target = generations.next_dir(shard)
    assert target == generations.generation_dir(shard, 5)
    marked_dir(target, "five")
    generations.point_to(shard, target)
    assert marker(shard) == "five" and generations.live_dir(shard) == target
    assert not os.path.lexists(shard + generations.LINK_TEMP)


def test_a_start_keeps_the_live_generation_and_removes_the_others(tmp_path):
    shard = str(tmp_path / "memories")
    for n in (1, 2, 3):
        marked_dir(generations.generation_dir(shard, n), str(n))
    generations.point_to(shard, generations.generation_dir(shard, 2))
    os.symlink("memories.g3", shard + generations.LINK_TEMP)  # killed before the link's replacement
    done = generations.recover(shard)
    assert len(done) == 3  # the half-made link, the replaced generation, the one that never went live
    assert marker(shard) == "2" and sorted(os.listdir(tmp_path)) == ["memories", "memories.g2"]


def test_a_missing_or_dangling_link_is_put_back_to_the_oldest_generation(tmp_path):
    shard = str(tmp_path / "memories")
    marked_dir(generations.generation_dir(shard, 0), "zero")  # adopt killed between its rename and its link
    generations.recover(shard)
    assert marker(shard) == "zero"
    os.unlink(shard)
    os.symlink("memories.g7", shard)  # a link to nothing
    generations.recover(shard)
    assert marker(shard) == "zero"


def test_nothing_on_disk_is_nothing_to_do(tmp_path):
    shard = str(tmp_path / "memories")
    assert generations.recover(shard) == [] and not generations.adopt(shard)
    assert generations.live_dir(shard) == shard and generations.live_number(shard) is None
    assert generations.next_dir(shard) == generations.generation_dir(shard, 1)


def test_remove_takes_the_link_and_every_generation(tmp_path):
    shard = str(tmp_path / "memories")
    other = marked_dir(str(tmp_path / "memories-archive.g1"), "another shard's name")
    for n in (0, 1):
        marked_dir(generations.generation_dir(shard, n), str(n))
    generations.point_to(shard, generations.generation_dir(shard, 1))
    generations.remove(shard)
    assert os.listdir(tmp_path) == [os.path.basename(other)]
    legacy = marked_dir(str(tmp_path / "legacy"), "a directory")
    generations.remove(legacy)
    assert not os.path.exists(legacy)


def test_the_lock_and_the_owner_name_the_link_not_the_generation_it_points_at(tmp_path):
    shard = str(tmp_path / "memories")
    marked_dir(generations.generation_dir(shard, 0), "zero")
    generations.point_to(shard, generations.generation_dir(shard, 0))
    before = shard_lock._lock_path(shard)
    marked_dir(generations.generation_dir(shard, 1), "one")
    generations.point_to(shard, generations.generation_dir(shard, 1))
    assert shard_lock._lock_path(shard) == before == generations.stable_path(shard) + ".lock"
    assert generations.stable_path(shard + "/") == os.path.join(os.path.realpath(tmp_path), "memories")


def test_a_failed_directory_sync_after_the_link_moved_is_logged_not_raised(tmp_path, monkeypatch, caplog):
    """The swap undoes itself on an exception from point_to: it must not, once the link points at the new one."""
    shard = str(tmp_path / "memories")
    for n in (0, 1):
        marked_dir(generations.generation_dir(shard, n), str(n))
    generations.point_to(shard, generations.generation_dir(shard, 0))

    def no_fsync(fd):
        raise OSError("EIO")

    monkeypatch.setattr(os, "fsync", no_fsync)
    generations.point_to(shard, generations.generation_dir(shard, 1))
    assert marker(shard) == "1" and "fsync" in caplog.text
