"""Builds the memory group's store, curator and service on the configured storage (the one
place its adapters are chosen and its services are built)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared import runtime
from shared.config import names
from shared.domain_events.wiring import build_domain_events, build_dynamo_outbox
from shared.memory.ports import FindingStore, MemoryStore
from shared.memory.service import MemoryService
from shared.search.memory_index import SearchMemoryIndex
from shared.storage.backends import Adapters, TableLookup

# The curator and detection run in this process only with inline curation (local); in AWS the
# memories table's stream feeds the curator function, so the memory group never loads them.
if TYPE_CHECKING:
    from shared.memory.curator import Curator
    from shared.memory.detection import BackgroundDetection, Detector
    from shared.storage.sqlite import Database


def _sqlite_memories(database: Database) -> MemoryStore:
    from shared.memory.adapters.sqlite import SqliteMemoryStore

    return SqliteMemoryStore(database)


def _dynamo_memories(tables: TableLookup) -> MemoryStore:
    from shared.memory.adapters.dynamodb import DynamoMemoryStore

    return DynamoMemoryStore(tables(names.TABLE_MEMORIES), build_dynamo_outbox())


def _sqlite_findings(database: Database) -> FindingStore:
    from shared.memory.adapters.sqlite import SqliteFindingStore

    return SqliteFindingStore(database)


def _dynamo_findings(tables: TableLookup) -> FindingStore:
    # The curator's findings (conflicts, duplicate clusters) live beside the memories.
    from shared.memory.adapters.dynamodb import DynamoFindingStore

    return DynamoFindingStore(tables(names.TABLE_MEMORIES), build_dynamo_outbox())


MEMORIES = Adapters(sqlite=_sqlite_memories, dynamodb=_dynamo_memories)
FINDINGS = Adapters(sqlite=_sqlite_findings, dynamodb=_dynamo_findings)


def build_memory_store() -> MemoryStore:
    return runtime.backend().build(MEMORIES)


def build_finding_store() -> FindingStore:
    return runtime.backend().build(FINDINGS)


@runtime.cached
def build_curator() -> Curator:
    """The curator (dedupe, merge, link) on the memory store and the search engine."""
    from shared.memory.curator import Curator

    index = SearchMemoryIndex()
    return Curator(build_memory_store(), index, index)


@runtime.cached
def build_detector() -> Detector:
    """Conflict and duplicate detection on the memory store, its findings and the search
    engine (the stream-fed curator runs it in AWS, `build_detection_queue` locally); with
    `curator_model_id` set, a Bedrock model judges contradictions, the rules as fallback."""
    from shared.memory.detection import Detector

    index = SearchMemoryIndex()
    settings = runtime.settings()
    if settings.curator_model_id:
        import boto3

        from shared.memory.adapters.bedrock_judge import BedrockJudge

        client = boto3.client("bedrock-runtime", region_name=settings.region)
        return Detector(
            build_memory_store(),
            index,
            index,
            build_finding_store(),
            judge_pair=BedrockJudge(client, settings.curator_model_id),
            events=build_domain_events(),
        )
    return Detector(
        build_memory_store(), index, index, build_finding_store(), events=build_domain_events()
    )


@runtime.cached
def build_detection_queue() -> BackgroundDetection | None:
    """Locally (inline curation) a background worker thread; in AWS none: the memories
    table's stream feeds the curator, which detects."""
    if runtime.settings().curation != "inline":
        return None
    from shared.memory.detection import BackgroundDetection

    detection = BackgroundDetection(build_detector())
    runtime.on_reconfigure(detection.stop)
    return detection


@runtime.cached
def build_memory_service() -> MemoryService:
    """The memory group's service, built once per process."""
    # Memories are ranked by the hybrid engine (BM25 + vectors), the same one `search` uses.
    store = build_memory_store()
    detection = build_detection_queue()
    curation = None
    if runtime.settings().curation == "inline":
        from shared.memory.curator import InlineCuration

        curation = InlineCuration(build_curator(), detection)
    return MemoryService(
        store,
        SearchMemoryIndex(),
        curation=curation,
        findings=build_finding_store(),
        detection=detection,
        events=build_domain_events(),
    )
