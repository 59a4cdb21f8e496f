"""Builds the artifact records on the configured storage (the one place their adapter is
chosen; the bytes are `ArtifactBlobs`, chosen in `build_artifact_service`)."""

from __future__ import annotations

from shared import runtime
from shared.config import names
from shared.orchestrator.artifacts.ports import ArtifactRecords


def build_artifact_records() -> ArtifactRecords:
    """The artifact records of the configured storage: SQLite in the data folder, or DynamoDB."""
    if runtime.settings().storage == "sqlite":
        from shared.orchestrator.artifacts.sqlite import SqliteArtifactRecords

        return SqliteArtifactRecords(runtime.database())
    from shared.orchestrator.artifacts.adapters import DynamoArtifactRecords

    return DynamoArtifactRecords(runtime.table(names.TABLE_COORDINATION))
