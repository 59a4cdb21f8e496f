"""What the sync service needs: an inbox, connector state, the registered connectors and the
team's sync lock."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Protocol

from shared.connectors.models import ConnectorRecord, ConnectorStatus
from shared.sync.models import InboxFile, SyncRun, SyncScheduleView

# The team's sync lock (`sync` and scheduled runs hold it); a connector's own lock is
# `connector_lock(name)`.
SYNC_LOCK = "sync"


def connector_lock(name: str) -> str:
    """The lock one connector's sync holds, whether or not the team's sync lock is held, so
    two syncs of one connector never share its cache or its item versions at once."""
    return f"connector:{name}"


class Inbox(Protocol):
    """Files agents put for later indexing: S3 in AWS, a folder of the data dir locally."""

    def put(self, team: str, name: str, body: str) -> str:
        """Store a new file; returns its path. `FileExists` if the name is taken."""
        ...

    def files(self, team: str) -> Iterator[InboxFile]: ...

    def names(self, team: str) -> Iterator[str]:
        """The team's file names, without reading the files (to size a sync cheaply)."""
        ...


class SyncState(Protocol):
    """Per team: when each connector last synced, and the lease that keeps syncs one at a time."""

    def acquire_lock(
        self, team: str, holder: str, now: datetime, lease_seconds: int, *, name: str = SYNC_LOCK
    ) -> bool:
        """Take the team's lock `name` (the sync lock, or one connector's `connector:<name>`)
        for `lease_seconds` from `now` (one conditional write): True when it was free or its
        lease had expired (taken over), False while another holds it. Exactly one of
        concurrent callers wins; each team's locks of different names are independent."""
        ...

    def renew_lock(
        self, team: str, holder: str, now: datetime, lease_seconds: int, *, name: str = SYNC_LOCK
    ) -> bool:
        """Extend the lock to `lease_seconds` from `now` while `holder` still holds it (a long
        run keeps its lock); False when it was taken over or released meanwhile."""
        ...

    def release_lock(self, team: str, holder: str, *, name: str = SYNC_LOCK) -> None:
        """Free the lock if `holder` still holds it (a lock taken over meanwhile is left)."""
        ...

    def record_sync(self, team: str, source: str, finished_at: datetime) -> None:
        """Remember that `source` finished syncing at `finished_at` (replaces the last time)."""
        ...

    def last_syncs(self, team: str) -> dict[str, datetime]:
        """Each recorded source of the team with its last sync time."""
        ...

    def put_run(self, team: str, run: SyncRun) -> None:
        """Create or replace the team's run record `run.run_id` (its runner is its one
        writer once started)."""
        ...

    def get_run(self, team: str, run_id: str) -> SyncRun | None:
        """The team's run of that id; None for another team's or an unknown id."""
        ...

    def recent_runs(self, team: str, limit: int) -> list[SyncRun]:
        """The team's newest `limit` runs, newest first (run ids sort by creation time)."""
        ...


class RunLauncher(Protocol):
    """Starts the sync runner on a run recorded as queued, without waiting for it: an
    asynchronous Lambda invoke in AWS, a worker thread of the local server."""

    def launch(self, team: str, run_id: str) -> None: ...


class ScheduleBook(Protocol):
    """A team's sync schedules, the team-wide one and one per connector (`source`):
    EventBridge Scheduler in AWS, the database locally (where the local server's scheduler
    fires them)."""

    def put(
        self, team: str, schedule_expression: str, source: str | None = None
    ) -> SyncScheduleView:
        """Create or replace `team`'s schedule (its connector `source`'s, if given)."""
        ...

    def get(self, team: str, source: str | None = None) -> SyncScheduleView | None: ...

    def delete(self, team: str, source: str | None = None) -> bool:
        """Remove `team`'s schedule (its connector `source`'s, if given); False when it had
        none."""
        ...

    def team_schedules(self, team: str) -> list[SyncScheduleView]:
        """Every schedule of `team`: the team-wide one first, then its connectors' by source."""
        ...


class FileExists(Exception):
    """An inbox file of that name already exists."""


class ConnectorStore(Protocol):
    """A team's registered connectors (name, kind, settings: never a secret), each one's last
    sync status, and the version of every item it last synced (what makes a sync incremental)."""

    def add(self, team: str, record: ConnectorRecord, *, replace: bool = False) -> None:
        """Register `record`; `ConnectorExists` when the name is taken (unless `replace`: then
        the settings change and the status and item versions are kept)."""
        ...

    def get(self, team: str, name: str) -> ConnectorRecord | None: ...

    def list(self, team: str) -> list[ConnectorRecord]:
        """The team's connectors, by name."""
        ...

    def remove(self, team: str, name: str) -> bool:
        """Forget the connector and its item versions; False when there was none."""
        ...

    def record_status(self, team: str, name: str, status: ConnectorStatus) -> bool:
        """Replace the connector's status; False (and nothing written) when it was removed."""
        ...

    def item_versions(self, team: str, name: str) -> dict[str, str]:
        """Each item id the connector last synced, with its version."""
        ...

    def update_item_versions(
        self, team: str, name: str, changed: Mapping[str, str], removed: Iterable[str]
    ) -> None:
        """Set the versions of `changed` items and forget the `removed` ones."""
        ...


class ConnectorExists(Exception):
    """A connector of that name is already registered for the team."""
