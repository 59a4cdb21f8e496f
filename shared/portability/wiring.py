"""Builds the portability service on the configured backend (the one place that picks its
parts): the stores' `TeamData`, the search index, the local folders and the token cache."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from shared import runtime
from shared.config.tables import ALL_TABLES
from shared.portability.service import ArtifactBytes, Portability, TeamFolders
from shared.storage.backends import Adapters, TableLookup
from shared.storage.team_data import TeamData

if TYPE_CHECKING:
    from shared.storage.sqlite import Database
    from shared.sync.ports import ScheduleBook


def _sqlite_team_data(database: Database) -> TeamData:
    from shared.storage.team_data_sqlite import SqliteTeamData

    ensure_every_store(database)
    return SqliteTeamData(database)


def _dynamo_team_data(tables: TableLookup) -> TeamData:
    from shared.portability.dynamo_rows import DynamoRows
    from shared.storage.team_data_dynamo import DynamoTeamData

    by_id = {spec.logical_id: tables(spec.logical_id) for spec in ALL_TABLES}
    return DynamoRows(DynamoTeamData(by_id), by_id, _schedule_book)


def _schedule_book() -> ScheduleBook | None:
    """Where a stack keeps the team's sync schedule (EventBridge Scheduler), if it has one."""
    if not runtime.settings().sync_schedule_group:
        return None
    from shared.sync.wiring import build_schedule_book

    return build_schedule_book()


TEAM_DATA = Adapters(sqlite=_sqlite_team_data, dynamodb=_dynamo_team_data)


def build_team_data() -> TeamData:
    """Every store's team data on the process's backend."""
    return runtime.backend().build(TEAM_DATA)


def ensure_every_store(database: Database) -> None:
    """Apply every store's schema, so an import into a fresh data folder finds each table
    (stores otherwise create theirs at first use)."""
    import importlib

    for module in SQLITE_STORE_MODULES:
        database.migrate(importlib.import_module(module).MIGRATIONS)


# Every module declaring a SQLite store's `MIGRATIONS` (tests/unit/portability checks the list
# is complete).
SQLITE_STORE_MODULES = (
    "shared.auth.adapters.sqlite",
    "shared.domain_events.adapters.sqlite_log_rows",
    "shared.handoffs.adapters.sqlite",
    "shared.knowledge.adapters.sqlite",
    "shared.memory.adapters.sqlite",
    "shared.orchestrator.agents.sqlite",
    "shared.orchestrator.artifacts.sqlite",
    "shared.orchestrator.costs.adapters.sqlite",
    "shared.orchestrator.tasks.adapters.sqlite",
    "shared.search.adapters.sqlite_documents",
    "shared.sessions.adapters.sqlite",
    "shared.sync.adapters.sqlite",
    "shared.sync.adapters.sqlite_connectors",
    "shared.workflows.adapters.sqlite",
)


def _reindex(team: str) -> dict[str, int]:
    """Put the team's documents, memories and knowledge nodes back in the search index (after
    an import): every type the index holds (`shared.search.models.INDEXED_TYPES`)."""
    import sys

    from shared.app.sync_service import build_sync_service
    from shared.knowledge.adapters.search_index import SearchNodeIndex
    from shared.knowledge.wiring import build_stores
    from shared.search.wiring import build_search_service

    search = build_search_service()
    chunks = search.rebuild(team)
    counts = {"document_chunks": chunks, **build_sync_service().runs.reindex_memories(team)}
    nodes = SearchNodeIndex(search)
    batch: list[Any] = []
    indexed = 0
    for node in build_stores().recent_nodes(team, cap=sys.maxsize):
        batch.append(node)
        if len(batch) == NODE_BATCH:
            nodes.index(team, batch)
            indexed, batch = indexed + len(batch), []
    if batch:
        nodes.index(team, batch)
        indexed += len(batch)
    counts["knowledge_nodes_indexed"] = indexed
    return counts


NODE_BATCH = 256


def _erase_index(team: str) -> int:
    from shared.search.wiring import build_search_service

    return build_search_service().index.delete_team(team)


def _forget_tokens(team: str) -> None:
    from shared.auth.cache import PROCESS

    PROCESS.evict(team=team)


def _erase_in_aws(team: str) -> dict[str, int]:
    """What AWS keeps of a team outside the tables: its artifact bytes and inbox files in the
    artifacts bucket (every version), and its sync schedule and workflow schedules in
    EventBridge Scheduler. Locally these are folders and rows, erased already."""
    settings = runtime.settings()
    if settings.is_local:
        return {}
    import boto3

    from shared.config import names
    from shared.storage.s3 import delete_prefix

    counts: dict[str, int] = {}
    s3 = boto3.client("s3", region_name=settings.region)
    for kind, prefix in (
        ("artifact_files", names.BUCKET_PREFIX_ARTIFACTS),
        ("inbox_files", names.BUCKET_PREFIX_INBOX),
    ):
        if held := delete_prefix(s3, settings.artifacts_bucket, f"{prefix}/{team}/"):
            counts[kind] = held
    if settings.sync_schedule_group:
        from shared.sync.wiring import build_schedule_book

        if build_schedule_book().delete(team):
            counts["sync_schedules"] = 1
    if settings.workflow_schedule_group:
        from shared.workflows.adapters.scheduler import EventBridgeSchedules

        workflow_schedules = EventBridgeSchedules(
            boto3.client("scheduler", region_name=settings.region),
            group=settings.workflow_schedule_group,
            role_arn=settings.workflow_scheduler_role_arn or "",
            target_arn=lambda: "",  # removal names no target
        )
        if removed := workflow_schedules.remove_team(team):
            counts["workflow_schedules"] = removed
    return counts


def _restore_in_aws(team: str) -> dict[str, int]:
    """What an import into a stack re-creates outside the tables: the schedules of the team's
    schedule-triggered workflows (the sync schedule is a record the import writes itself)."""
    if runtime.settings().is_local:
        return {}
    from shared.workflows.wiring import restore_schedules

    restored = restore_schedules(team)
    return {"workflow_schedules": restored} if restored else {}


def _erase_elsewhere(team: str) -> dict[str, int]:
    """What a team leaves outside the stores, on either backend: its GitHub webhook secret
    (the data folder's secrets file, or the stack's secret), and in AWS `_erase_in_aws`."""
    from shared.knowledge.wiring import forget_webhook_secret

    counts = _erase_in_aws(team)
    if forget_webhook_secret(team):
        counts["webhook_secrets"] = 1
    return counts


class BucketArtifactBytes:
    """A team's artifact bytes in the artifacts bucket (`artifacts/<team>/<artifact id>`),
    through the artifact store's own blob adapter (`put` never overwrites)."""

    def __init__(self, client: Any, bucket: str) -> None:
        from shared.orchestrator.artifacts.adapters import S3ArtifactBlobs

        self._client = client
        self._bucket = bucket
        self._blobs = S3ArtifactBlobs(client, bucket)

    def ids(self, team: str) -> Iterator[str]:
        from shared.config import names

        prefix = f"{names.BUCKET_PREFIX_ARTIFACTS}/{team}/"
        paginator = self._client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self._bucket, Prefix=prefix):
            for listed in page.get("Contents", []):
                yield str(listed["Key"]).removeprefix(prefix)

    def get(self, team: str, artifact_id: str) -> bytes:
        return self._blobs.get(team, artifact_id)

    def location(self, team: str, artifact_id: str) -> str:
        return self._blobs.location(team, artifact_id)

    def put(self, team: str, artifact_id: str, body: bytes) -> bool:
        from shared.orchestrator.artifacts.ports import BlobExists

        try:
            self._blobs.put(team, artifact_id, body, "application/octet-stream")
        except BlobExists:
            return False
        return True


def build_portability(*, with_index: bool = True) -> Portability:
    """The process's portability service (`with_index=False`: leave the search index alone,
    for tests of the stores alone)."""
    settings = runtime.settings()
    local = settings.is_local and settings.data_dir is not None
    folders = (
        TeamFolders(settings.data_dir / "artifacts", settings.data_dir / "inbox")
        if local and settings.data_dir is not None
        else TeamFolders()
    )
    artifact_bytes: ArtifactBytes | None = None
    if not local:
        import boto3

        client = boto3.client("s3", region_name=settings.region)
        artifact_bytes = BucketArtifactBytes(client, settings.artifacts_bucket)
    return Portability(
        build_team_data(),
        folders=folders,
        erase_index=_erase_index if with_index else None,
        reindex=_reindex if with_index else None,
        forget_tokens=_forget_tokens,
        erase_elsewhere=_erase_elsewhere,
        restore_elsewhere=_restore_in_aws,
        artifact_bytes=artifact_bytes,
    )
