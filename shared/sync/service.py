"""Sync (seed 000): run the team's connectors, prune expired memories, report status; and the
inbox agents write into.

The one connector every deployment has is `inbox`: files put by `inbox_put` are indexed as
documents of source `inbox`, incrementally by content hash, and files removed from the inbox are
tombstoned. `sync` holds the team's sync lock (a lease, one conditional write) and answers
`{"skipped": true, "reason": "lock"}` while another sync holds it; `sync_run` runs without it.

On a large team (more than `LARGE_TEAM_ITEMS` documents, memories and inbox files) `sync`,
`sync_run` and `embeddings_build` do not run inside the tool call (24 s): they record a queued
run, start the sync runner on it (`shared.sync.runs`) and wait up to `RUN_WAIT_SECONDS` for it.
The answer always has the seed's fields, filled from the run: its results when it ended in
time, else what it has done so far with the connector marked unfinished; the run rides
alongside and `sync_status` reports the rest. A team's schedule (`sync_schedule_*`) is managed
here too.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from datetime import UTC, datetime
from itertools import islice
from typing import Any, Protocol

from shared.auth.principal import Principal
from shared.connectors.kinds import SourceContext
from shared.connectors.models import ConnectorRecord
from shared.memory.ports import MemoryStore
from shared.search.models import DocumentInput
from shared.search.service import MEMORY_SOURCE, SearchService
from shared.sync.connectors import ConnectorSync, register_connector
from shared.sync.models import (
    INBOX_EXTENSIONS,
    OPEN_RUN_STATES,
    ConnectorResult,
    ConnectorStatus,
    InboxFile,
    RunKind,
    SyncOutput,
    SyncRunView,
    SyncScheduleView,
    SyncStats,
    SyncStatusOutput,
)
from shared.sync.ports import (
    ConnectorStore,
    FileExists,
    Inbox,
    RunLauncher,
    ScheduleBook,
    SyncState,
)
from shared.sync.runs import (
    LOCK_LEASE_SECONDS,
    RunExecutor,
    lock_holder,
    new_run,
    start_run,
    view,
)
from shared.sync.schedules import ScheduleError, expression
from shared.tools.errors import InvalidArgument, NotFound, ToolError

INBOX_SOURCE = "inbox"
CONNECTORS = (INBOX_SOURCE,)
# A team with more documents, memories and inbox files than this syncs and rebuilds in the
# background: a rebuild re-embeds what the embedding cache lacks (Titan: one request per
# chunk, ~50 ms; the local MiniLM measured 115 ms an item uncached on a loaded 2-core machine),
# so 200 uncached items take 10-23 s, near the 24 s a tool call has (docs/sync.md, "Long runs
# off the tool path"). Counting stops at the threshold: a cheap check.
LARGE_TEAM_ITEMS = 200
# How long a large team's sync / embeddings_build waits for its background run before it
# answers with the run's progress: inside the 24 s a group has (docs/infra/functions-and-
# bundling.md), leaving room for the size check, the launch and the answer.
RUN_WAIT_SECONDS = 18.0
# How many recent runs sync_status lists.
STATUS_RUNS = 5
_TEAM_SCHEDULE = "omit it for the team's own schedule"
_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.DOTALL)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class RunnerUnavailable(ToolError):
    """The sync runner could not be started; the run is recorded failed and may be retried."""

    code = "unavailable"
    status = 503


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


def _sync_answer(run: SyncRunView) -> SyncOutput:
    """Seed 000's sync answer from a background run: the inbox connector's result (`success`
    only once the run succeeded; the message says where it stands) and the memories pruned."""
    counts = run.counts
    if run.state == "succeeded":
        message = f"Found {counts.get('entities_seen', 0)} files (background run {run.run_id})"
    elif run.state == "failed":
        message = f"the background run {run.run_id} failed: {run.error}"
    else:
        where = f"{run.phase} {run.done}/{run.total or '?'}" if run.phase else run.state
        message = (
            f"still running in the background as {run.run_id} ({where}); these counts are "
            f"what it has done so far: sync_status with run_id {run.run_id!r} reports the end"
        )
    stats = SyncStats(
        entities_seen=counts.get("entities_seen", 0),
        chunks_written=counts.get("chunks_written", 0),
        entities_tombstoned=counts.get("entities_tombstoned", 0),
        errors=1 if run.state == "failed" else 0,
        started_at=run.started_at or run.created_at,
        finished_at=run.finished_at,
    )
    connector = ConnectorResult(
        source=INBOX_SOURCE, success=run.state == "succeeded", message=message, stats=stats
    )
    return SyncOutput(connectors=[connector], memory_pruned=counts.get("memory_pruned", 0), run=run)


def _indexed(run: SyncRunView) -> int:
    """embeddings_build's `total` from a background run: chunks and memories indexed, so far
    while it still runs (the phase in progress counts its `done`)."""
    total = run.counts.get("chunks_indexed", 0) + run.counts.get("memories_indexed", 0)
    if run.state in OPEN_RUN_STATES and run.phase in ("documents", "memories"):
        total += run.done
    return total


@dataclass(eq=False)
class SyncService:
    """The sync group's logic over search (documents), memory pruning, state and the inbox."""

    search: SearchService
    memories: MemoryPruner
    state: SyncState  # the sync state store (the runner records scheduled runs in it)
    inbox: Inbox
    clock: Callable[[], float] = time.time
    _: KW_ONLY
    memory_store: MemoryStore
    launcher: Callable[[], RunLauncher] | None = None
    schedules: Callable[[], ScheduleBook] | None = None
    large_team: int = LARGE_TEAM_ITEMS
    run_wait_seconds: float = RUN_WAIT_SECONDS
    sleep: Callable[[float], None] = time.sleep
    connectors: ConnectorStore | None = None
    source_context: SourceContext | None = None

    def __post_init__(self) -> None:
        self._connector_sync = (
            ConnectorSync(self.search, self.connectors, self.source_context, self.now, self.state)
            if self.connectors is not None and self.source_context is not None
            else None
        )
        # The work of a background run; also what the sync runner function executes.
        self.runs = RunExecutor(
            self.state,
            self.search,
            self.memory_store,
            self.connector_counts,
            lambda: self.clock(),
            remove_connector=self._remove_connector_run,
        )

    def now(self) -> datetime:
        """The service's clock (injected in tests)."""
        return datetime.fromtimestamp(self.clock(), tz=UTC)

    def sync(
        self, principal: Principal, *, source: str | None, lock: bool, background: bool = True
    ) -> SyncOutput:
        """Run the team's connectors (all, or `source`) and prune expired memories; on a large
        team (with `background`), start a background run instead and answer with it."""
        team = principal.team
        self._check_source(team, source, "omit it to sync every connector")
        if background and self.is_large(team):
            started = self._start(principal, "sync", source=source, lock=lock)
            if started is None:
                return SyncOutput(skipped=True, reason="lock")
            return _sync_answer(self._await(team, started))
        holder = f"{principal.actor}:{secrets.token_hex(4)}"
        if lock and not self.state.acquire_lock(team, holder, self.now(), LOCK_LEASE_SECONDS):
            return SyncOutput(skipped=True, reason="lock")
        try:
            results = self._run_connectors(team, source)
            pruned = self.memories.prune_expired(team)
        finally:
            if lock:
                self.state.release_lock(team, holder)
        return SyncOutput(connectors=results, memory_pruned=pruned)

    def connector_counts(self, team: str, source: str | None = None) -> dict[str, int]:
        """A background run's connector step: every connector (or the one `source` names)
        and the memory pruning (the run holds the lock, or was asked to run without it), as
        counts."""
        results = self._run_connectors(team, source)
        return {
            "entities_seen": sum(r.stats.entities_seen for r in results),
            "chunks_written": sum(r.stats.chunks_written for r in results),
            "entities_tombstoned": sum(r.stats.entities_tombstoned for r in results),
            "connector_errors": sum(r.stats.errors for r in results),
            "memory_pruned": self.memories.prune_expired(team),
        }

    def connector_add(
        self,
        team: str,
        *,
        name: str,
        kind: str,
        config: dict[str, Any],
        replace: bool = False,
        by: str = "cli",
    ) -> ConnectorRecord:
        """Register a connector for `team` (`cairn connectors add`); a bad name, kind or
        setting is `InvalidArgument` naming it. `replace` changes an existing one's settings,
        keeping what it synced (a branch change lists the new branch's files at the next
        sync and tombstones the rest)."""
        return register_connector(
            self._connector_store(),
            team,
            name=name,
            kind=kind,
            config=config,
            replace=replace,
            by=by,
            now=self.now(),
            local=self._local_sources(),
        )

    def connector_list(self, team: str) -> list[ConnectorRecord]:
        return self._registered_all(team)

    def connector_remove(self, team: str, name: str, *, keep_documents: bool = False) -> int:
        """Forget `team`'s connector `name` and (unless `keep_documents`) tombstone its
        documents; returns how many. `NotFound` naming `name` when there is none. Its
        schedule goes with it."""
        if not self._connector_store().remove(team, name):
            raise NotFound(f"team {team!r} has no connector {name!r}", field="name")
        if self.schedules is not None:
            self.schedules().delete(team, name)
        return 0 if keep_documents else self._tombstone_source(team, name)

    def _tombstone_source(self, team: str, source: str) -> int:
        removed = 0
        for entity in list(self.search.documents.iter_entities(team, source)):
            if self.search.delete_document(team, entity.id):
                removed += 1
        return removed

    def _remove_connector_run(self, team: str, name: str) -> dict[str, int]:
        """A `remove_connector` run (a deployed stack's `cairn connectors remove`, which
        cannot reach the index itself): the connector, its schedule and its documents. A
        connector already gone still has its documents taken out."""
        try:
            return {"documents_removed": self.connector_remove(team, name)}
        except NotFound:
            return {"documents_removed": self._tombstone_source(team, name)}

    def _connector_store(self) -> ConnectorStore:
        if self.connectors is None:
            raise RunnerUnavailable("this deployment keeps no connectors")
        return self.connectors

    def _local_sources(self) -> bool:
        return self.source_context is not None and self.source_context.local

    def _registered(self, team: str, name: str) -> ConnectorRecord | None:
        return None if self.connectors is None else self.connectors.get(team, name)

    def _registered_all(self, team: str) -> list[ConnectorRecord]:
        return [] if self.connectors is None else self.connectors.list(team)

    def _run_connectors(self, team: str, source: str | None) -> list[ConnectorResult]:
        """The inbox and every registered connector (or the one `source` names), each on its
        own: one failing is its result's error, and the others still run."""
        results: list[ConnectorResult] = []
        if source in (None, INBOX_SOURCE):
            results.append(self._run_inbox(team))
        if source == INBOX_SOURCE or self._connector_sync is None:
            return results
        records = self._registered_all(team)
        for record in records:
            if source is None or record.name == source:
                results.append(self._connector_sync.run(team, record))
        return results

    def is_large(self, team: str) -> bool:
        """More than `large_team` documents, memories and inbox files (counting stops past
        it, so a large team costs at most that many item reads to recognise)."""
        limit = self.large_team + 1
        seen = 0
        for items in (
            lambda: self.search.documents.iter_entities(team),
            lambda: self.memory_store.iter_team(team),
            lambda: self.inbox.names(team),
        ):
            seen += sum(1 for _ in islice(items(), limit - seen))
            if seen >= limit:
                return True
        return False

    def embeddings_build(
        self, principal: Principal, *, source: str | None
    ) -> tuple[int, SyncRunView | None]:
        """Rebuild the team's index from the stores: documents (one source, or all) and, with
        no `source`, the memories. A large team's build runs in the background and is waited
        for (`RUN_WAIT_SECONDS`): `(chunks indexed, or indexed so far, run)`."""
        team = principal.team
        if source == MEMORY_SOURCE:
            raise InvalidArgument(
                "`source` 'memory' is not a document source (got 'memory'); omit `source` to "
                "rebuild every source and the memories, or give a document source (e.g. inbox)",
                field="source",
            )
        if self.is_large(team):
            started = self._start(principal, "embeddings_build", source=source, lock=False)
            assert started is not None  # no lock asked for: always started
            run = self._await(team, started)
            return _indexed(run), run
        total = self.search.rebuild(team, source)
        if source is None:
            total += self.runs.reindex_memories(team)["memories_indexed"]
        return total, None

    def _start(
        self, principal: Principal, kind: RunKind, *, source: str | None, lock: bool
    ) -> SyncRunView | None:
        """Record a queued run and start the runner on it; None while another sync holds the
        team's lock (when `lock`)."""
        if self.launcher is None:
            raise RunnerUnavailable(
                "this deployment cannot start background runs (no sync runner configured)"
            )
        team, now = principal.team, self.now()
        run = new_run(kind, source=source, requested_by=principal.actor, now=now, holds_lock=lock)
        if lock and not self.state.acquire_lock(
            team, lock_holder(run.run_id), now, LOCK_LEASE_SECONDS
        ):
            return None
        try:
            start_run(self.state, self.launcher, team, run, self.now)
        except Exception as exc:
            if lock:
                self.state.release_lock(team, lock_holder(run.run_id))
            raise RunnerUnavailable(
                f"could not start the background run ({type(exc).__name__}); nothing was "
                "changed: call again shortly"
            ) from exc
        return view(run, now)

    def _await(self, team: str, run: SyncRunView) -> SyncRunView:
        """The run once it has ended, or as it stands after `run_wait_seconds`."""
        deadline = time.monotonic() + self.run_wait_seconds
        pause = 0.05
        while run.state in OPEN_RUN_STATES:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self.sleep(min(pause, left))
            pause = min(pause * 2, 0.5)
            record = self.state.get_run(team, run.run_id)
            if record is None:
                break
            run = view(record, self.now())
        return run

    def start_scheduled(
        self, team: str, schedule: str, source: str | None = None
    ) -> SyncRunView | None:
        """A schedule fired (the local scheduler): queue a `scheduled` run of `team` (of its
        connector `source` alone, for a connector's schedule) under the sync lock; None while
        another sync holds it."""
        principal = Principal(
            team=team,
            token_id=f"schedule:{schedule}",
            token_name=schedule,
            scopes=frozenset({"sync"}),
        )
        started = self._start(principal, "scheduled", source=source, lock=True)
        if started is None:  # recorded, as the runner in AWS records it
            now = self.now()
            skipped = new_run(
                "scheduled", source=source, requested_by=principal.actor, now=now, holds_lock=False
            ).model_copy(
                update={
                    "state": "skipped",
                    "finished_at": now,
                    "error": "another sync holds the lock",
                }
            )
            self.state.put_run(team, skipped)
        return started

    def status_report(self, principal: Principal, run_id: str | None) -> SyncStatusOutput:
        """`sync_status`: the connectors and sources, and the background runs."""
        if run_id is not None:  # an unknown run is an error before anything else is read
            runs = self.runs_status(principal, run_id)
            return SyncStatusOutput(connectors=self.status(principal), runs=runs)
        return SyncStatusOutput(
            connectors=self.status(principal), runs=self.runs_status(principal, None)
        )

    def runs_status(self, principal: Principal, run_id: str | None) -> list[SyncRunView]:
        """The team's recent background runs, newest first, or the one `run_id` names."""
        team, now = principal.team, self.now()
        if run_id is None:
            return [view(r, now) for r in self.state.recent_runs(team, STATUS_RUNS)]
        run = self.state.get_run(team, run_id)
        if run is None:
            raise NotFound(
                f"`run_id`: your team has no sync run {run_id!r}; omit `run_id` to list the "
                "recent runs",
                field="run_id",
            )
        return [view(run, now)]

    # ------------------------------------------------------------------ schedules

    def _book(self) -> ScheduleBook:
        if self.schedules is None:
            raise InvalidArgument(
                "this deployment has no sync schedule group configured "
                "(CAIRN_SYNC_SCHEDULE_GROUP); ask its operator",
                field="every",
            )
        return self.schedules()

    def schedule_set(
        self,
        principal: Principal,
        *,
        every: str | None,
        cron: str | None,
        source: str | None = None,
    ) -> SyncScheduleView:
        """Create or replace the caller's team's sync schedule (its own only), or the one of
        its connector `source`."""
        field = "cron" if cron is not None else "every"
        try:
            schedule_expression = expression(every=every, cron=cron)
            if cron is not None:
                from shared.workflows.cron import CronError, check

                try:
                    check(schedule_expression)
                except CronError as exc:
                    raise ScheduleError(f"--cron: {exc}") from exc
        except ScheduleError as exc:
            message = str(exc).replace("--every", "`every`").replace("--cron", "`cron`")
            raise InvalidArgument(message, field=field) from exc
        self._check_source(principal.team, source, _TEAM_SCHEDULE)
        return self._book().put(principal.team, schedule_expression, source)

    def schedule_get(
        self, principal: Principal, source: str | None = None
    ) -> tuple[SyncScheduleView | None, list[SyncScheduleView] | None]:
        """The team's schedule (or its connector `source`'s) and, without `source`, its
        connectors' schedules beside it (None when it has none)."""
        if source is not None:
            found = self._book().get(principal.team, source)
            if found is None:  # a schedule outliving its connector is still shown
                self._check_source(principal.team, source, _TEAM_SCHEDULE)
            return found, None
        every = self._book().team_schedules(principal.team)
        whole = next((s for s in every if s.source is None), None)
        # None without any: the answer is then exactly what it was before connector schedules.
        return whole, [s for s in every if s.source is not None] or None

    def schedule_delete(self, principal: Principal, source: str | None = None) -> bool:
        deleted = self._book().delete(principal.team, source)
        if not deleted and source is not None:  # a schedule outliving its connector still goes
            self._check_source(principal.team, source, _TEAM_SCHEDULE)
        return deleted

    def _check_source(self, team: str, source: str | None, omitted: str) -> None:
        """`source`, when given, must be one of the team's connectors (`omitted`: what
        leaving it out does, for the message)."""
        if source is None or source == INBOX_SOURCE or self._registered(team, source):
            return
        known = [INBOX_SOURCE, *(r.name for r in self._registered_all(team))]
        raise InvalidArgument(
            f"`source` must be one of the team's connectors: {', '.join(known)} (got "
            f"{source!r}); pick one of them, or {omitted} (add one with `cairn connectors "
            "add`)",
            field="source",
        )

    def _run_inbox(self, team: str) -> ConnectorResult:
        started = self.now()
        documents = [inbox_document(f) for f in self.inbox.files(team)]
        upserted = self.search.upsert_documents(team, documents)
        seen = {d.source_id for d in documents}
        tombstoned = 0
        for entity in list(self.search.documents.iter_entities(team, INBOX_SOURCE)):
            if entity.source_id not in seen and self.search.delete_document(team, entity.id):
                tombstoned += 1
        finished = self.now()
        self.state.record_sync(team, INBOX_SOURCE, finished)
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
        for entity in self.search.documents.iter_entities(team):
            counts[entity.source] = counts.get(entity.source, 0) + 1
            updated = datetime.fromisoformat(entity.updated_at)
            if entity.source not in newest or updated > newest[entity.source]:
                newest[entity.source] = updated
        synced = self.state.last_syncs(team)
        registered = {r.name: r for r in self._registered_all(team)}
        sources = sorted(set(counts) | set(synced) | set(CONNECTORS) | set(registered))
        statuses: list[ConnectorStatus] = []
        for s in sources:
            status = ConnectorStatus(
                source=s, entities=counts.get(s, 0), last_sync=synced.get(s) or newest.get(s)
            )
            if (record := registered.get(s)) is not None:
                status.kind = record.kind
                status.last_sync = record.status.last_sync
                status.counts = record.status.counts
                status.last_error = record.status.last_error
            statuses.append(status)
        return statuses

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
        now = self.now()
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
                path = self.inbox.put(principal.team, name, body)
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
            synced = self.sync(principal, source=INBOX_SOURCE, lock=True, background=False)
            return path, not synced.skipped
        return path, False
