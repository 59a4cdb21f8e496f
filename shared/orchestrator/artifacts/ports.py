"""What the artifact service needs: a place for the bytes, one for the records, the tasks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from shared.orchestrator.artifacts.models import Artifact
from shared.orchestrator.tasks.models import Task


class ArtifactBlobs(Protocol):
    """Artifact bytes: S3 in AWS, a folder of the data dir locally. Written once, never replaced."""

    def put(self, team: str, artifact_id: str, body: bytes, mime_type: str) -> str:
        """Store new bytes; returns where they are. `BlobExists` if the id already has bytes."""
        ...

    def get(self, team: str, artifact_id: str) -> bytes:
        """The stored bytes; `BlobMissing` when there are none."""
        ...


class ArtifactRecords(Protocol):
    """Artifact records of one team at a time."""

    def create(self, team: str, artifact: Artifact) -> None: ...

    def get(self, team: str, artifact_id: str) -> Artifact | None: ...

    def iter_team(
        self, team: str, *, task_id: str | None, workflow_id: str | None
    ) -> Iterator[Artifact]:
        """The team's artifacts matching every filter given (in no particular order)."""
        ...


class TaskLookup(Protocol):
    """The task store as the artifact service sees it (every `TaskStore` implements it)."""

    def get(self, team: str, task_id: str) -> Task | None: ...


class BlobExists(Exception):
    """Bytes are already stored under that artifact id."""


class BlobMissing(Exception):
    """No bytes are stored under that artifact id."""
