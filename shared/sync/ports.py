"""What the sync service needs: an inbox, connector state and the team's sync lock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Protocol

from shared.sync.models import InboxFile


class Inbox(Protocol):
    """Files agents put for later indexing: S3 in AWS, a folder of the data dir locally."""

    def put(self, team: str, name: str, body: str) -> str:
        """Store a new file; returns its path. `FileExists` if the name is taken."""
        ...

    def files(self, team: str) -> Iterator[InboxFile]: ...


class SyncState(Protocol):
    def acquire_lock(self, team: str, holder: str, now: datetime, lease_seconds: int) -> bool:
        """Take the team's sync lock (one conditional write); False while another holds it."""
        ...

    def release_lock(self, team: str, holder: str) -> None: ...

    def record_sync(self, team: str, source: str, finished_at: datetime) -> None: ...

    def last_syncs(self, team: str) -> dict[str, datetime]: ...


class FileExists(Exception):
    """An inbox file of that name already exists."""
