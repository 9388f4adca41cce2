"""Write a backup archive from the command line (the archive ``GET /backup`` serves).

    python -m ops.backup OUT.tar.gz [--include falkordb,qdrant]

In the embedded default stop the web process first: it owns the Qdrant Edge shard.
``python -m ops.restore`` reads the archive back.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import orjson

from pipeline.backup import parse_include, write_backup


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.backup", description="Write a mempipe backup archive.")
    parser.add_argument("output", type=Path)
    parser.add_argument("--include", default="falkordb,qdrant")
    args = parser.parse_args(argv)
    from pipeline.config import get_settings
    from pipeline.services import Services

    services = Services(get_settings())
    try:
        include = parse_include(args.include)
        counts = write_backup(args.output, services.graph, services.vectors if "qdrant" in include else None, include)
    finally:
        services.close()
    print(orjson.dumps({"archive": str(args.output), "records": counts}).decode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
