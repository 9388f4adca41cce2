"""The dead-letter queue from the command line (``pipeline.deadletters`` does the work).

    python -m ops.deadletters list            # what is dead, per queue, with the last error
    python -m ops.deadletters show Q ID       # one message in full (args, options, traceback)
    python -m ops.deadletters replay [-q Q] [--id ID]  # re-enqueue with a fresh retry budget
    python -m ops.deadletters purge  [-q Q]   # delete for good (asks no question: be sure)
"""

from __future__ import annotations

import argparse
import sys

import orjson

from pipeline.stages import ALL_QUEUES
from pipeline.deadletters import dead_messages, inspect, purge, replay


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.deadletters", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("list", "show", "replay", "purge"))
    parser.add_argument("target", nargs="*", help="show: QUEUE ID")
    parser.add_argument("-q", "--queue", action="append", choices=ALL_QUEUES, help="limit to a queue (repeatable)")
    parser.add_argument("--id", action="append", dest="ids", help="replay/purge only this message id (repeatable)")
    args = parser.parse_args(argv)
    from pipeline.broker import build_broker
    from pipeline.config import get_settings

    broker = build_broker(get_settings())
    queues = tuple(args.queue) if args.queue else ALL_QUEUES
    ids = set(args.ids) if args.ids else None
    if args.command == "show":
        if len(args.target) != 2:
            parser.error("show needs QUEUE and ID")
        return _show(broker, args.target[0], args.target[1])
    if args.command == "list":
        for dead in dead_messages(broker, queues):
            sys.stdout.write(orjson.dumps(dead.summary()).decode() + "\n")
    elif args.command == "replay":
        print(f"replayed {replay(broker, queues, ids)} message(s)")
    else:
        print(f"purged {purge(broker, queues, ids)} message(s)")
    return 0


def _show(broker, queue: str, redis_id: str) -> int:
    found = inspect(broker, queue, redis_id)
    if found is None:
        print("no such dead message", file=sys.stderr)
        return 1
    sys.stdout.write(orjson.dumps(found, option=orjson.OPT_INDENT_2).decode() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
