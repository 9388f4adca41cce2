"""Write a synthetic Slack export (standard layout) of any size, for benchmarks.

    python -m ops.bench.gen_slack_export OUT_DIR --messages 100000 [--channels 20] [--users 300] [--seed 7]

Deterministic for a seed. Messages look like a busy workspace: a quarter are thread replies,
some carry reactions, mentions and links, a few are joins (skipped on import). Day files
are written one at a time, so generating 1M messages needs no more memory than 1k.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

WORDS = (
    "deploy build release test review merge branch bug fix crash latency cache database index query schema "
    "migration rollback incident alert metric dashboard queue worker memory cpu disk network timeout retry "
    "customer ticket feature design spec meeting sprint roadmap budget hiring onboarding docs api client "
    "server kubernetes docker terraform python rust golang frontend backend mobile android ios search ranking "
    "model embedding vector graph pipeline batch stream event kafka redis postgres falkordb qdrant slack"
).split()
TEAM = "TSYNTH0001"


def _sentence(rng: random.Random, users: list[str]) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 30))]
    if rng.random() < 0.15:
        words.insert(rng.randrange(len(words)), f"<@{rng.choice(users)}>")
    if rng.random() < 0.08:
        words.append(f"<https://example.org/{rng.choice(WORDS)}|{rng.choice(WORDS)} doc>")
    return " ".join(words).capitalize() + "."


def generate(out: Path, messages: int, channels: int = 20, users: int = 300, seed: int = 7,
             per_day: int = 250) -> dict[str, int]:
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    user_ids = [f"U{index:08d}" for index in range(users)]
    (out / "users.json").write_text(json.dumps([
        {"id": u, "team_id": TEAM, "name": f"user{n}", "real_name": f"User {n}",
         "profile": {"display_name": f"user{n}", "real_name": f"User {n}"}} for n, u in enumerate(user_ids)
    ]))
    names = [f"channel-{index:03d}" for index in range(channels)]
    (out / "channels.json").write_text(json.dumps([{"id": f"C{i:08d}", "name": n} for i, n in enumerate(names)]))
    per_channel = [messages // channels + (1 if i < messages % channels else 0) for i in range(channels)]
    stats = {"messages": 0, "replies": 0, "joins": 0}
    start = datetime(2024, 1, 1, tzinfo=timezone.utc).timestamp()
    for name, count in zip(names, per_channel):
        folder = out / name
        folder.mkdir(exist_ok=True)
        clock, roots, written, day = start, [], 0, 0
        while written < count:
            batch = []
            for _ in range(min(per_day, count - written)):
                clock += rng.uniform(1, 300)
                ts = f"{clock:.6f}"
                message = {"type": "message", "user": rng.choice(user_ids), "ts": ts, "text": _sentence(rng, user_ids)}
                roll = rng.random()
                if roll < 0.02:
                    message.update(subtype="channel_join", text=f"<@{message['user']}> has joined the channel")
                    stats["joins"] += 1
                elif roll < 0.27 and roots:
                    message["thread_ts"] = rng.choice(roots[-20:])
                    stats["replies"] += 1
                elif roll < 0.40:
                    message["thread_ts"] = ts  # a root that will get replies
                    roots.append(ts)
                if rng.random() < 0.1:
                    message["reactions"] = [{"name": rng.choice(["+1", "tada", "eyes", "rocket"]),
                                             "users": [rng.choice(user_ids)], "count": 1}]
                batch.append(message)
            written += len(batch)
            stats["messages"] += len(batch)
            date = (datetime.fromtimestamp(start, timezone.utc) + timedelta(days=day)).strftime("%Y-%m-%d")
            (folder / f"{date}.json").write_text(json.dumps(batch))
            day += 1
    return stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.gen_slack_export", description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--channels", type=int, default=20)
    parser.add_argument("--users", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    stats = generate(args.out, args.messages, args.channels, args.users, args.seed)
    print(json.dumps({"out": str(args.out), **stats}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
