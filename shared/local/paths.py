"""Where the local server keeps its files, and the admin API's header: what CLI commands need
to find a running server without importing the server (`cairn tokens`, `cairn mcp`, ...)."""

from __future__ import annotations

import os
from pathlib import Path

from shared.config import names

ADMIN_KEY_FILE = "admin.key"
DEV_TOKEN_FILE = "dev-token"
ADMIN_HEADER = "X-Cairn-Admin-Key"


def default_data_dir() -> Path:
    """`$CAIRN_DATA_DIR`, else `$XDG_DATA_HOME/cairn`, else `~/.local/share/cairn`."""
    if configured := os.environ.get(names.Env.DATA_DIR):
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME")
    return (Path(xdg) if xdg else Path.home() / ".local" / "share") / "cairn"
