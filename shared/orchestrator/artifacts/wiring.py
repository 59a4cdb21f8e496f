"""Builds the artifact records, blobs and service on the configured storage (the one place
their adapters are chosen and the service built)."""

from __future__ import annotations

from shared import runtime
from shared.config import names
from shared.orchestrator.artifacts.ports import ArtifactBlobs, ArtifactRecords
from shared.orchestrator.artifacts.service import ArtifactService
from shared.orchestrator.tasks.wiring import build_task_store
from shared.storage.backends import Adapters

ARTIFACT_RECORDS = Adapters[ArtifactRecords].named(
    sqlite="shared.orchestrator.artifacts.sqlite:SqliteArtifactRecords",
    dynamodb="shared.orchestrator.artifacts.adapters:DynamoArtifactRecords",
    table=names.TABLE_COORDINATION,
)


def build_artifact_records() -> ArtifactRecords:
    """The artifact records of the configured storage: SQLite in the data folder, or DynamoDB."""
    return runtime.backend().build(ARTIFACT_RECORDS)


def build_artifact_blobs() -> ArtifactBlobs:
    """Where artifact bytes live: `<data_dir>/artifacts` in local mode with a data folder (an
    S3 bucket in moto's memory would lose them at the next `make serve`), else the artifacts
    bucket."""
    from shared.orchestrator.artifacts.adapters import FolderArtifactBlobs, S3ArtifactBlobs

    settings = runtime.settings()
    if settings.is_local and settings.data_dir is not None:
        return FolderArtifactBlobs(settings.data_dir / "artifacts")
    import boto3

    return S3ArtifactBlobs(
        boto3.client("s3", region_name=settings.region), settings.artifacts_bucket
    )


def build_artifact_service() -> ArtifactService:
    """The artifact service: records in the configured store, bytes from `build_artifact_blobs`,
    task lookups on the task store."""
    return ArtifactService(build_artifact_records(), build_artifact_blobs(), build_task_store())
