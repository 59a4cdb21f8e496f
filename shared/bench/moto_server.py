"""The reference for `cairn bench store`: cairn's old local path, DynamoDB adapters on moto.

Before the SQLite store, `make serve` ran every store on moto in one process, with one lock
around every call because moto has no per-item locking. This module serves the same gateway
that way, seeded in-process (moto keeps its tables in this process's memory), so the store
bench can put the two side by side in one run. It is a benchmark tool: moto is a dev dependency
and never part of `cairn serve`.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shared.bench.moto_server")
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--agents", type=int, required=True)
    parser.add_argument("--secrets", type=Path, required=True)
    args = parser.parse_args(argv)

    import boto3
    import uvicorn
    from moto import mock_aws

    from shared import runtime
    from shared.app.gateway import build_gateway, create_app
    from shared.app.groups import load_groups
    from shared.auth.wiring import build_token_service
    from shared.bench.store import PEPPER_FILE, seed
    from shared.config.settings import Settings
    from shared.config.tables import create_tables
    from shared.local.server import loopback_listener
    from shared.tools.invoker import InProcessInvoker

    data_dir = Path(os.environ["CAIRN_DATA_DIR"])
    pepper = (data_dir / PEPPER_FILE).read_text().strip()
    with mock_aws():
        # Curation as in AWS (a stream would feed it): no background detection thread, which
        # writes outside the lock around every call, and moto is not safe across threads (a
        # transaction's copy of the table met a write: "dictionary changed size").
        settings = Settings(
            environment="local",
            storage="dynamodb",
            data_dir=data_dir,
            token_pepper=pepper,
            curation="stream",
        )
        runtime.configure(settings)
        create_tables(boto3.client("dynamodb", region_name=settings.region))
        seeded = seed(args.size, args.agents, pepper)
        args.secrets.write_text(json.dumps({"admin": seeded.admin, "agents": seeded.agents}))
        invoker = InProcessInvoker(load_groups(), threading.RLock())
        gateway = build_gateway(settings, invoker, build_token_service(settings), local=True)
        sock = loopback_listener(int(os.environ["CAIRN_PORT"]))
        config = uvicorn.Config(create_app(gateway), log_level="warning", lifespan="off")
        uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
