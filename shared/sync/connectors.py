"""Syncing one registered connector: list its source, read what changed, index it through the
search service as `cairn index` does (chunked, embedded, unchanged text skipped by content
hash), tombstone what is gone, and record the connector's status.

Incremental twice over: an item whose version (a git blob id, a file's size and mtime, an S3
ETag, a page's ETag) is the one last synced is not read at all, and a read item whose text is
unchanged is not re-chunked or re-embedded (the search service's content hash). A source that
reports nothing changed since its cursor (a git branch still at the synced commit) ends the
sync before anything is listed.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from shared.connectors.documents import is_binary, to_document
from shared.connectors.kinds import SourceContext, open_source
from shared.connectors.models import (
    KIND_ALIASES,
    KINDS,
    NAME_PATTERN,
    RESERVED_NAMES,
    ConnectorError,
    ConnectorRecord,
    ConnectorStatus,
    GitSettings,
    parse_settings,
)
from shared.search.models import DocumentInput
from shared.search.service import SearchService
from shared.sync.models import ConnectorResult, SyncStats
from shared.sync.ports import ConnectorExists, ConnectorStore, SyncState, connector_lock
from shared.sync.runs import LOCK_LEASE_SECONDS
from shared.tools.errors import InvalidArgument

logger = logging.getLogger("cairn.sync")
# Documents handed to the search service at a time: bounds the texts held in memory.
UPSERT_BATCH = 64


def _message(error: BaseException) -> str:
    """An error in words that never carry a secret: ours are written so; any other is told
    by its kind only (its text may quote a URL with a token in it)."""
    if isinstance(error, ConnectorError):
        return str(error)[:500]
    return f"{type(error).__name__} (unexpected; see the server log)"


@dataclass(eq=False)
class ConnectorSync:
    """Runs registered connectors for a team."""

    search: SearchService
    store: ConnectorStore
    context: SourceContext
    now: Callable[[], datetime]
    locks: SyncState | None = None

    def run(self, team: str, record: ConnectorRecord) -> ConnectorResult:
        """Sync `record` under its own lock (`connector_lock`: `sync_run` skips the team's
        lock, and two syncs of one git connector must not fetch into one cache at once);
        while another sync of it holds the lock, the result says so and nothing is done. A
        failure is the result's (success false, the message naming the connector and the
        cause), never an exception: the team's other connectors go on."""
        if self.locks is None:
            return self._run(team, record, lambda: None)
        locks, name = self.locks, connector_lock(record.name)
        holder = f"connector:{secrets.token_hex(6)}"
        started = self.now()
        if not locks.acquire_lock(team, holder, started, LOCK_LEASE_SECONDS, name=name):
            return ConnectorResult(
                source=record.name,
                success=False,
                message=f"connector {record.name!r} ({record.kind}): skipped, another sync "
                "of it is running; it syncs again at the next sync",
                stats=SyncStats(started_at=started, finished_at=self.now()),
            )

        def keep() -> None:  # a long sync keeps its lock past the lease
            locks.renew_lock(team, holder, self.now(), LOCK_LEASE_SECONDS, name=name)

        try:
            return self._run(team, record, keep)
        finally:
            locks.release_lock(team, holder, name=name)

    def _run(self, team: str, record: ConnectorRecord, keep: Callable[[], None]) -> ConnectorResult:
        started = self.now()
        counts: dict[str, int] = {}
        cursor = record.status.cursor
        try:
            cursor, counts = self._sync(team, record, keep)
            error = None
        except Exception as exc:
            if not isinstance(exc, ConnectorError):
                logger.exception(
                    "connector sync failed", extra={"team": team, "connector": record.name}
                )
            error = f"connector {record.name!r} ({record.kind}): {_message(exc)}"
        finished = self.now()
        status = ConnectorStatus(
            last_sync=finished,
            last_success=finished if error is None else record.status.last_success,
            last_error=error,
            counts=counts,
            cursor=cursor,
        )
        self.store.record_status(team, record.name, status)
        stats = SyncStats(
            entities_seen=counts.get("seen", 0),
            chunks_written=counts.get("chunks", 0),
            entities_tombstoned=counts.get("tombstoned", 0),
            errors=0 if error is None else 1,
            started_at=started,
            finished_at=finished,
        )
        if error is not None:
            message = error
        elif counts.get("unchanged_source"):
            message = "Unchanged since the last sync"
        else:
            message = f"Found {counts.get('seen', 0)} files ({counts.get('indexed', 0)} changed)"
            skipped = {k: v for k, v in counts.items() if k.startswith("skipped_") and v}
            if skipped:
                message += "; skipped " + ", ".join(
                    f"{v} {k.removeprefix('skipped_').replace('_', ' ')}"
                    for k, v in sorted(skipped.items())
                )
        return ConnectorResult(
            source=record.name, success=error is None, message=message, stats=stats
        )

    def _sync(
        self, team: str, record: ConnectorRecord, keep: Callable[[], None]
    ) -> tuple[str | None, dict[str, int]]:
        settings = record.settings
        source = open_source(team, record, self.context)
        try:
            listing = source.list(record.status.cursor)
            if listing is None:
                return record.status.cursor, {"unchanged_source": 1}
            known = self.store.item_versions(team, record.name)
            counts = {
                "seen": 0,
                "indexed": 0,
                "unchanged": 0,
                "chunks": 0,
                "tombstoned": 0,
                "skipped_binary": 0,
                "skipped_too_large": 0,
                "skipped_over_limit": 0,
                **{f"skipped_{k}": v for k, v in listing.skipped.items()},
            }
            items = sorted(listing.items, key=lambda i: i.id)
            if len(items) > settings.max_files:
                counts["skipped_over_limit"] = len(items) - settings.max_files
                items = items[: settings.max_files]
            seen: set[str] = set()  # the items indexed: documents of others are tombstoned
            considered: set[str] = set()  # the items whose versions are kept
            versions: dict[str, str] = {}
            batch: list[DocumentInput] = []
            for item in items:
                if item.size is not None and item.size > settings.max_file_bytes:
                    counts["skipped_too_large"] += 1
                    continue
                seen.add(item.id)
                considered.add(item.id)
                counts["seen"] += 1
                previous = known.get(item.id)
                if item.version is not None and previous is not None:
                    kept, _, version = previous.rpartition(_SKIPPED)
                    if version == item.version:
                        # Unchanged; a binary or oversized item is counted skipped each time.
                        counts[kept or "unchanged"] += 1
                        if kept:
                            seen.discard(item.id)
                        continue
                fetched = source.read(item, previous)
                if fetched.skipped is not None:
                    key = f"skipped_{fetched.skipped}"
                    counts[key] = counts.get(key, 0) + 1
                    continue
                if fetched.data is None and fetched.text is None:  # unchanged (a 304)
                    counts["unchanged"] += 1
                    continue
                if fetched.version is not None:
                    versions[item.id] = fetched.version
                if fetched.text is not None:
                    text = fetched.text
                else:
                    assert fetched.data is not None
                    why = (
                        "skipped_too_large"
                        if len(fetched.data) > settings.max_file_bytes
                        else "skipped_binary"
                        if is_binary(fetched.data)
                        else None
                    )
                    if why is not None:
                        counts[why] += 1
                        seen.discard(item.id)
                        if fetched.version is not None:  # not read again until it changes
                            versions[item.id] = f"{why}{_SKIPPED}{fetched.version}"
                        continue
                    text = fetched.data.decode("utf-8")
                batch.append(
                    to_document(record.name, item.id, text, uri=item.uri, title=fetched.title)
                )
                if len(batch) >= UPSERT_BATCH:
                    self._upsert(team, batch, counts)
                    batch = []
                    keep()
            self._upsert(team, batch, counts)
            for entity in list(self.search.documents.iter_entities(team, record.name)):
                if entity.source_id not in seen and self.search.delete_document(team, entity.id):
                    counts["tombstoned"] += 1
            gone = [item for item in known if item not in considered]
            self.store.update_item_versions(team, record.name, versions, gone)
            return listing.cursor, {k: v for k, v in counts.items() if v or k in _ALWAYS}
        finally:
            source.close()

    def _upsert(self, team: str, batch: list[DocumentInput], counts: dict[str, int]) -> None:
        if not batch:
            return
        result = self.search.upsert_documents(team, batch)
        counts["indexed"] += result.indexed
        counts["unchanged"] += result.unchanged
        counts["chunks"] += result.chunks


# Between a skip reason and the version of an item not indexed (binary, too large).
_SKIPPED = "\x1f"
_ALWAYS = frozenset({"seen", "indexed", "unchanged", "chunks", "tombstoned"})


def register_connector(
    store: ConnectorStore,
    team: str,
    *,
    name: str,
    kind: str,
    config: dict[str, Any],
    replace: bool,
    by: str,
    now: datetime,
    local: bool,
) -> ConnectorRecord:
    """Check and register a connector (`cairn connectors add`, on the local server or a
    stack): a bad name, kind or setting is `InvalidArgument` naming it; `local` says whether
    folders of this machine and private addresses may be read."""
    from pydantic import ValidationError

    if not re.match(NAME_PATTERN, name) or name in RESERVED_NAMES:
        raise InvalidArgument(
            f"`name` must be 1-40 lowercase letters, digits, - or _ and not "
            f"{', '.join(sorted(RESERVED_NAMES))} (got {name!r})",
            field="name",
        )
    canonical = KIND_ALIASES.get(kind, kind)
    if canonical not in KINDS:
        raise InvalidArgument(
            f"`kind` must be one of {', '.join(KINDS)} (got {kind!r})", field="kind"
        )
    try:
        settings = parse_settings(canonical, config)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"] if p != canonical) or "settings"
        raise InvalidArgument(
            f"`{where}`: {first['msg']} (a {canonical} connector)", field=where
        ) from None
    if canonical in ("folder", "obsidian") and not local:
        raise InvalidArgument(
            f"`kind` {canonical} reads a folder of the server's machine: local mode only "
            "(in AWS, use git or s3)",
            field="kind",
        )
    if isinstance(settings, GitSettings) and settings.url.startswith("ssh:") and not local:
        raise InvalidArgument(
            "`url`: an ssh:// URL runs this machine's ssh client, which the Lambda runtime "
            "lacks: local mode only (in AWS, use https:// with token_secret_arn)",
            field="url",
        )
    if canonical == "web" and config.get("allow_private") and not local:
        raise InvalidArgument(
            "`allow_private` is for local testing only: a deployed stack never reads "
            "private or loopback addresses",
            field="allow_private",
        )
    record = ConnectorRecord(
        name=name, kind=canonical, settings=settings, created_at=now, created_by=by
    )
    try:
        store.add(team, record, replace=replace)
    except ConnectorExists:
        raise InvalidArgument(
            f"`name`: team {team!r} already has a connector {name!r}; remove it first, or "
            "add it with --replace to change its settings",
            field="name",
        ) from None
    return store.get(team, name) or record
