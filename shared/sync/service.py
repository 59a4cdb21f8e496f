"""Sync (seed 000): run the team's connectors, prune expired memories, report status; and the
inbox agents write into.

The one connector every deployment has is `inbox`: files put by `inbox_put` are indexed as
documents of source `inbox`, incrementally by content hash, and files removed from the inbox are
tombstoned. `sync` holds the team's sync lock (a lease, one conditional write) and answers
`{"skipped": true, "reason": "lock"}` while another sync holds it; `sync_run` runs without it.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from shared.auth.principal import Principal
from shared.search.models import DocumentInput
from shared.search.service import SearchService
from shared.sync.models import (
    INBOX_EXTENSIONS,
    ConnectorResult,
    ConnectorStatus,
    InboxFile,
    SyncOutput,
    SyncStats,
)
from shared.sync.ports import FileExists, Inbox, SyncState
from shared.tools.errors import InvalidArgument

INBOX_SOURCE = "inbox"
CONNECTORS = (INBOX_SOURCE,)
LOCK_LEASE_SECONDS = 900
_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.DOTALL)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class MemoryPruner(Protocol):
    def prune_expired(self, team: str) -> int: ...


def inbox_document(file: InboxFile) -> DocumentInput:
    """An inbox file as a document: its JSON front matter gives title and tags."""
    header: dict[str, Any] = {}
    text = file.body
    if match := _FRONT_MATTER.match(text):
        try:
            parsed = json.loads(match.group(1))
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            header, text = parsed, text[match.end() :]
    title = header.get("title") if isinstance(header.get("title"), str) else None
    raw_tags = header.get("tags")
    tags = [t for t in raw_tags if isinstance(t, str)] if isinstance(raw_tags, list) else []
    return DocumentInput(
        source=INBOX_SOURCE,
        source_id=file.name,
        title=title or file.name.rsplit(".", 1)[0],
        text=text,
        uri=file.path,
        tags=tags,
    )


class SyncService:
    """The sync group's logic over search (documents), memory pruning, state and the inbox."""

    def __init__(
        self,
        search: SearchService,
        memories: MemoryPruner,
        state: SyncState,
        inbox: Inbox,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._search = search
        self._memories = memories
        self._state = state
        self._inbox = inbox
        self._clock = clock

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), tz=UTC)

    def sync(self, principal: Principal, *, source: str | None, lock: bool) -> SyncOutput:
        """Run the team's connectors (all, or `source`) and prune expired memories."""
        team = principal.team
        if source is not None and source not in CONNECTORS:
            raise InvalidArgument(
                f"`source` must be one of {', '.join(CONNECTORS)} (got {source!r}); pick one of "
                "them, or omit it to sync every source",
                field="source",
            )
        holder = f"{principal.actor}:{secrets.token_hex(4)}"
        if lock and not self._state.acquire_lock(team, holder, self._now(), LOCK_LEASE_SECONDS):
            return SyncOutput(skipped=True, reason="lock")
        try:
            results = [self._run_inbox(team)]
            pruned = self._memories.prune_expired(team)
        finally:
            if lock:
                self._state.release_lock(team, holder)
        return SyncOutput(connectors=results, memory_pruned=pruned)

    def _run_inbox(self, team: str) -> ConnectorResult:
        started = self._now()
        documents = [inbox_document(f) for f in self._inbox.files(team)]
        upserted = self._search.upsert_documents(team, documents)
        seen = {d.source_id for d in documents}
        tombstoned = 0
        for entity in list(self._search.documents.iter_entities(team, INBOX_SOURCE)):
            if entity.source_id not in seen and self._search.delete_document(team, entity.id):
                tombstoned += 1
        finished = self._now()
        self._state.record_sync(team, INBOX_SOURCE, finished)
        return ConnectorResult(
            source=INBOX_SOURCE,
            success=True,
            message=f"Found {len(documents)} files ({upserted.indexed} changed)",
            stats=SyncStats(
                entities_seen=len(documents),
                chunks_written=upserted.chunks,
                entities_tombstoned=tombstoned,
                started_at=started,
                finished_at=finished,
            ),
        )

    def status(self, principal: Principal) -> list[ConnectorStatus]:
        """Every connector and document source of the team: live entities and last sync.

        A source no connector syncs (`cairn index` folders, `references`) reports the time its
        newest document was indexed.
        """
        team = principal.team
        counts: dict[str, int] = {}
        newest: dict[str, datetime] = {}
        for entity in self._search.documents.iter_entities(team):
            counts[entity.source] = counts.get(entity.source, 0) + 1
            updated = datetime.fromisoformat(entity.updated_at)
            if entity.source not in newest or updated > newest[entity.source]:
                newest[entity.source] = updated
        synced = self._state.last_syncs(team)
        sources = sorted(set(counts) | set(synced) | set(CONNECTORS))
        return [
            ConnectorStatus(
                source=s, entities=counts.get(s, 0), last_sync=synced.get(s) or newest.get(s)
            )
            for s in sources
        ]

    def inbox_put(
        self,
        principal: Principal,
        *,
        content: str,
        title: str | None,
        tags: list[str],
        metadata: dict[str, Any],
        filename: str | None,
        extension: str | None,
        sync_immediately: bool,
    ) -> tuple[str, bool]:
        """File `content` in the team's inbox; returns its path and whether it was indexed now
        (`sync_immediately` while no other sync holds the lock), else at the next sync."""
        now = self._now()
        # A file name only: folders in `filename` are dropped, so a name never leaves the inbox.
        base = re.split(r"[/\\]", filename)[-1] if filename else (title or "note")
        if base.rsplit(".", 1)[-1].lower() in INBOX_EXTENSIONS and "." in base:
            base = base.rsplit(".", 1)[0]
        stem = _UNSAFE.sub("-", base).strip("-.")[:80] or "note"
        suffix = extension or "md"
        header = {"title": title, "tags": tags, "metadata": metadata, "author": principal.actor}
        body = "---\n" + json.dumps({k: v for k, v in header.items() if v}) + "\n---\n" + content
        path = ""
        for attempt in range(5):
            extra = f"-{secrets.token_hex(3)}" if attempt else ""
            name = f"{now:%Y%m%d_%H%M%S}_{stem}{extra}.{suffix}"
            try:
                path = self._inbox.put(principal.team, name, body)
                break
            except FileExists:
                continue
        else:
            raise InvalidArgument(
                "`filename`: could not find a free inbox file name; retry, or give another "
                "`filename`",
                field="filename",
            )
        if sync_immediately:
            # Running a sync is the `sync` scope's right, not `ingest`'s.
            if not principal.has_any_scope(("sync",)):
                raise InvalidArgument(
                    "`sync_immediately` needs a token with the `sync` scope; the file is "
                    f"stored at {path} and is indexed at the next sync (omit "
                    "`sync_immediately`, or use a token that has `sync`)",
                    field="sync_immediately",
                )
            synced = self.sync(principal, source=INBOX_SOURCE, lock=True)
            return path, not synced.skipped
        return path, False
