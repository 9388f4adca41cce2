"""Names of a workspace's users and channels, kept on the broker's Redis for the events path.

An export carries ``users.json`` and ``channels.json``; live events carry only ids. The admin
import saves the names here, so events render ``<@U123>`` as the same display name and tag
the same ``slack:channel:<name>`` as the import did. Unknown ids fall back to the id.
"""

from __future__ import annotations

import redis

from pipeline.slack.render import Directory

_USERS = "mempipe:slack:users:"
_CHANNELS = "mempipe:slack:channels:"


class DirectoryCache:
    def __init__(self, client: redis.Redis):
        self._redis = client

    def save(self, team: str, directory: Directory) -> None:
        pipe = self._redis.pipeline(transaction=False)
        if directory.users:
            pipe.hset(_USERS + team, mapping=directory.users)
        if directory.channels:
            pipe.hset(_CHANNELS + team, mapping=directory.channels)
        pipe.execute()

    def lookup(self, team: str, user_ids: list[str], channel_id: str | None) -> Directory:
        pipe = self._redis.pipeline(transaction=False)
        pipe.hmget(_USERS + team, user_ids) if user_ids else pipe.echo("")
        pipe.hget(_CHANNELS + team, channel_id) if channel_id else pipe.echo("")
        names, channel = pipe.execute()
        users = {u: n.decode() for u, n in zip(user_ids, names or []) if n} if user_ids else {}
        channels = {channel_id: channel.decode()} if channel_id and channel else {}
        return Directory(users=users, channels=channels)
