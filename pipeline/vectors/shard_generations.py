"""The Edge shard's directory behind a stable path: ``<shard>`` is a link to ``<shard>.g<N>``.

qdrant_edge writes a shard's files by path for as long as the shard is open, so an open
shard's directory must never move. A swap that renamed directories (the live one out, the
built one in) therefore had to close the live shard before opening the built one, and every
recall waited for both. With generations the built shard is opened in its own directory,
next to the live one and while the live one goes on answering; it goes live by an atomic
replace of the link, and the old directory is removed once the old shard is closed.

On disk: ``<shard>`` a relative symbolic link to ``<name>.g<N>``, the live generation. Any
other ``<name>.g<M>`` is either a build that never went live or a generation already
replaced: ``recover`` removes both. A shard from before generations (``<shard>`` a directory)
becomes generation 0 when it is next opened (``adopt``).

Call everything here holding the shard's lock (pipeline.vectors.shard_lock), shard closed
unless said otherwise.
"""

from __future__ import annotations

import logging
import os
import re
import shutil

log = logging.getLogger(__name__)

LINK_TEMP = ".link"  # the new link, before it replaces the live one


def stable_path(path: str) -> str:
    """The shard's path with its parent resolved but not the link itself: the same across swaps."""
    path = path.rstrip("/")
    return os.path.join(os.path.realpath(os.path.dirname(path) or "."), os.path.basename(path))


def _pattern(path: str) -> re.Pattern:
    return re.compile(re.escape(os.path.basename(path.rstrip("/"))) + r"\.g(\d+)$")


def generations(path: str) -> dict[int, str]:
    """Every ``<shard>.g<N>`` directory beside ``path``, by N."""
    parent = os.path.dirname(path.rstrip("/")) or "."
    pattern = _pattern(path)
    try:
        names = os.listdir(parent)
    except FileNotFoundError:
        return {}
    found = {}
    for name in names:
        match = pattern.match(name)
        if match and os.path.isdir(os.path.join(parent, name)) and not os.path.islink(os.path.join(parent, name)):
            found[int(match.group(1))] = os.path.join(parent, name)
    return found


def generation_dir(path: str, number: int) -> str:
    return f"{path.rstrip('/')}.g{number}"


def live_dir(path: str) -> str:
    """The directory the shard lives in now: the link's target (or ``path`` itself before ``adopt``)."""
    path = path.rstrip("/")
    if os.path.islink(path):
        return os.path.join(os.path.dirname(path), os.readlink(path))
    return path


def live_number(path: str) -> int | None:
    """The live generation's N (None before ``adopt`` or when there is no shard)."""
    match = _pattern(path).match(os.path.basename(live_dir(path)))
    return int(match.group(1)) if match else None


def next_dir(path: str) -> str:
    """Where the next generation goes: one past every generation beside the shard."""
    return generation_dir(path, max([*generations(path), live_number(path) or 0]) + 1)


def point_to(path: str, target: str) -> None:
    """Make ``target`` (a generation directory beside ``path``) the live one, atomically."""
    path = path.rstrip("/")
    temp = path + LINK_TEMP
    if os.path.lexists(temp):
        os.unlink(temp)
    os.symlink(os.path.basename(target.rstrip("/")), temp)
    os.replace(temp, path)
    _sync_dir(os.path.dirname(path) or ".")


def _sync_dir(directory: str) -> None:
    """Make the link's replacement durable (a host crash right after must not bring back the
    old one). The replacement has happened whatever this does, so a failure here is logged,
    never raised: the caller must not undo a swap the link already points at."""
    try:
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        log.warning("Edge shard: the link's new target may not survive a host crash (fsync of %s: %s)", directory, exc)


def adopt(path: str) -> bool:
    """A shard directory from before generations becomes generation 0; True when one was moved."""
    path = path.rstrip("/")
    if not os.path.isdir(path) or os.path.islink(path):
        return False
    zero = generation_dir(path, 0)
    if os.path.lexists(zero):
        shutil.rmtree(zero)  # a generation nothing points at: the directory at ``path`` is the shard
    os.rename(path, zero)
    point_to(path, zero)
    return True


def recover(path: str) -> list[str]:
    """Remove every generation but the live one (and a half-made link); returns what was done.

    A link that is missing (or points at nothing) while generations exist is put back, to
    the oldest: only ``adopt`` leaves that state (between its rename and its link), with
    generation 0 alone.
    """
    path = path.rstrip("/")
    done = []
    temp = path + LINK_TEMP
    if os.path.lexists(temp):
        os.unlink(temp)
        done.append(f"removed {temp}")
    found = generations(path)
    if os.path.islink(path) and not os.path.isdir(path) and found:
        os.unlink(path)
        done.append(f"removed {path}, a link to nothing")
    if not os.path.lexists(path) and found:
        oldest = found[min(found)]
        point_to(path, oldest)
        done.append(f"linked {path} to {oldest}")
    live = os.path.realpath(live_dir(path)) if os.path.islink(path) else None
    for directory in found.values():
        if os.path.realpath(directory) != live:
            shutil.rmtree(directory, ignore_errors=True)
            done.append(f"removed {directory}")
    for line in done:
        log.warning("Edge shard: an interrupted index swap was cleaned up: %s", line)
    return done


def remove(path: str) -> None:
    """The shard gone: its link and every generation (or the directory before ``adopt``)."""
    path = path.rstrip("/")
    for directory in generations(path).values():
        shutil.rmtree(directory, ignore_errors=True)
    if os.path.islink(path):
        os.unlink(path)
    else:
        shutil.rmtree(path, ignore_errors=True)
