"""`cairn index`: into the running local server if there is one, else into the data folder."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from shared.config import names
from shared.local.runtime import ADMIN_KEY_FILE, IndexRequest, LocalRuntime, default_data_dir


class IndexingFailed(Exception):
    """Indexing failed; the message says why."""


def _server_running(port: int) -> bool:
    try:
        with urllib.request.urlopen(
            f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource", timeout=2
        ):
            return True
    except OSError:
        return False


def index_folder(path: str, *, team: str, source: str) -> dict[str, Any]:
    """Index `path` for `team`; returns the connector's stats (scanned, indexed, unchanged, …)."""
    request = IndexRequest(path=str(Path(path).expanduser().resolve()), team=team, source=source)
    data_dir = default_data_dir()
    port = int(os.environ.get(names.Env.PORT, names.DEFAULT_PORT))
    if _server_running(port):
        key_file = data_dir / ADMIN_KEY_FILE
        if not key_file.exists():
            raise IndexingFailed(f"a server runs on port {port} but {key_file} is missing")
        http_request = urllib.request.Request(
            f"http://127.0.0.1:{port}/_local/index",
            data=request.model_dump_json().encode(),
            method="POST",
            headers={
                "X-Cairn-Admin-Key": key_file.read_text().strip(),
                "Content-Type": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(http_request, timeout=3600) as response:  # noqa: S310
                stats: dict[str, Any] = json.loads(response.read())
                return stats
        except urllib.error.HTTPError as exc:
            raise IndexingFailed(json.loads(exc.read() or b"{}").get("detail", exc.reason)) from exc
    # No server: run the local runtime in this process just long enough to index and save.
    local = LocalRuntime(data_dir)
    local.start()
    try:
        return local.index(request)
    except Exception as exc:
        detail = getattr(exc, "detail", None)
        if detail:
            raise IndexingFailed(str(detail)) from exc
        raise
    finally:
        local.stop()
