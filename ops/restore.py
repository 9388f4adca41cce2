"""Restore a backup archive (from GET /backup or ``ops.backup``) into the configured stores.

    python -m ops.restore snapshot.tar.gz [--wipe]

In the embedded default stop mempipe first: the web process owns the Qdrant Edge shard.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import orjson

from pipeline.restore import restore


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.restore", description=__doc__.splitlines()[0])
    parser.add_argument("archive", type=Path)
    parser.add_argument("--wipe", action="store_true", help="delete everything in both stores first")
    args = parser.parse_args(argv)
    from pipeline.config import get_settings
    from pipeline.services import Services

    services = Services(get_settings())
    try:
        report = restore(args.archive, services.graph, services.vectors, lambda: services.embedder, wipe_first=args.wipe,
                         labelled=services.settings.embed_labelled_sentences)
    finally:
        services.close()
    print(orjson.dumps({"restored": report}).decode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
