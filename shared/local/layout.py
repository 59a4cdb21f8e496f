"""The local server's layout, shared by the server (`runtime`) and the commands that find and
call it (`discovery`, `indexing`): its data folder, the files it keeps there, and the admin
API's key header and progress media type."""

from __future__ import annotations

import os
from pathlib import Path

from shared.config import names

ADMIN_KEY_FILE = "admin.key"
PEPPER_FILE = "pepper"
DEV_TOKEN_FILE = "dev-token"
ADMIN_HEADER = "X-Cairn-Admin-Key"
NDJSON = "application/x-ndjson"


def default_data_dir() -> Path:
    """`$CAIRN_DATA_DIR`, else `$XDG_DATA_HOME/cairn`, else `~/.local/share/cairn`."""
    if configured := os.environ.get(names.Env.DATA_DIR):
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME")
    return (Path(xdg) if xdg else Path.home() / ".local" / "share") / "cairn"
