"""Export, import and erase one team across every store (docs/portability.md).

The stores are reached through one `TeamData` port (`shared.storage.team_data`); what lives
beside them is passed in: the search index (derived: erased with the team, rebuilt after an
import), the folders of artifact bytes and inbox files (local mode), and the process's token
cache (a deleted team's tokens must be refused at once, not a cache minute later).
"""

from __future__ import annotations

import base64
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from shared.portability.format import ExportReader, FormatError, end_line, header, line
from shared.storage.sqlite import from_json, to_json
from shared.storage.team_data import TOKEN_KIND, BadRecord, Record, TeamData

ARTIFACT_BYTES_KIND = "artifact_bytes"
# The artifact store's table: its records name where their bytes are (`storage`).
ARTIFACTS_KIND = "artifacts"
IMPORT_BATCH = 500
# Team names are path parts in the local folders: never one that leaves its folder.
_UNSAFE = ("", ".", "..")


@dataclass(frozen=True)
class Progress:
    """How far an import is (the shape `cairn index` shows: a stage, done of total)."""

    stage: str
    done: int
    total: int


ProgressCallback = Callable[[Progress], None]


@dataclass
class ImportReport:
    team: str
    read: dict[str, int] = field(default_factory=dict)
    written: int = 0
    reindexed: dict[str, int] = field(default_factory=dict)
    # What the import re-created outside the stores (a stack's workflow schedules).
    restored: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        tokens = self.read.get(TOKEN_KIND, 0)
        return {
            "team": self.team,
            "read": dict(sorted(self.read.items())),
            "written": self.written,
            "unchanged": sum(self.read.values()) - tokens - self.written,
            # Listed in the file by name and scopes; a token is its secret: issue new ones.
            "tokens_not_restored": tokens,
            "reindexed": self.reindexed,
            "restored": self.restored,
        }


@dataclass(frozen=True)
class TeamFolders:
    """Local folders holding a team's files in `<root>/<team>/…` (None: not on this backend)."""

    artifacts: Path | None = None
    inbox: Path | None = None


def _checked_name(name: str, what: str) -> str:
    if name in _UNSAFE or "/" in name or "\\" in name:
        raise BadRecord(f"unusable {what} {name!r}")
    return name


def _team_folder(root: Path | None, team: str) -> Path | None:
    if root is None:
        return None
    if team in _UNSAFE or "/" in team or "\\" in team:
        raise ValueError(f"unusable team name for a folder: {team!r}")
    return root / team


class ArtifactBytes(Protocol):
    """A team's artifact bytes, by artifact id: what export reads and import writes."""

    def ids(self, team: str) -> Iterator[str]: ...

    def get(self, team: str, artifact_id: str) -> bytes: ...

    def put(self, team: str, artifact_id: str, body: bytes) -> bool:
        """Store `body` unless the artifact's bytes are there already; whether it wrote."""
        ...

    def location(self, team: str, artifact_id: str) -> str:
        """Where the artifact store of this backend keeps those bytes (an artifact's `storage`)."""
        ...


class FolderArtifactBytes:
    """Artifact bytes in `<root>/<team>/<artifact id>` (local mode)."""

    def __init__(self, root: Path) -> None:
        self._root = root

    def ids(self, team: str) -> Iterator[str]:
        folder = _team_folder(self._root, team)
        if folder is None or not folder.is_dir():
            return
        for path in sorted(folder.iterdir()):
            if path.is_file() and not path.name.startswith("."):
                yield path.name

    def get(self, team: str, artifact_id: str) -> bytes:
        return (self._root / team / _checked_name(artifact_id, "artifact id")).read_bytes()

    def location(self, team: str, artifact_id: str) -> str:
        return str(self._root / team / _checked_name(artifact_id, "artifact id"))

    def put(self, team: str, artifact_id: str, body: bytes) -> bool:
        folder = _team_folder(self._root, team)
        assert folder is not None
        path = folder / _checked_name(artifact_id, "artifact id")
        if path.exists():
            return False
        folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{artifact_id}.partial")
        partial.write_bytes(body)
        os.replace(partial, path)  # whole or absent
        return True


class Portability:
    """One backend's export, import and erasure of a team."""

    def __init__(
        self,
        data: TeamData,
        *,
        folders: TeamFolders = TeamFolders(),
        erase_index: Callable[[str], int] | None = None,
        reindex: Callable[[str], dict[str, int]] | None = None,
        forget_tokens: Callable[[str], None] | None = None,
        erase_elsewhere: Callable[[str], dict[str, int]] | None = None,
        restore_elsewhere: Callable[[str], dict[str, int]] | None = None,
        artifact_bytes: ArtifactBytes | None = None,
    ) -> None:
        self._data = data
        self._folders = folders
        # Where artifact bytes are read for an export and written by an import: the folder
        # of local mode unless given (the artifacts bucket in AWS).
        self._bytes = artifact_bytes or (
            FolderArtifactBytes(folders.artifacts) if folders.artifacts is not None else None
        )
        self._erase_index = erase_index
        self._reindex = reindex
        self._forget_tokens = forget_tokens
        self._erase_elsewhere = erase_elsewhere
        self._restore_elsewhere = restore_elsewhere

    # ------------------------------------------------------------------ export

    def export(self, team: str) -> Iterator[str]:
        """The team's export file, line by line (streamed: constant memory)."""
        yield line(header(team, self._data.backend))
        count = 0
        for record in self._data.export_team(team):
            count += 1
            yield line(record)
        for record in self._artifact_bytes(team):
            count += 1
            yield line(record)
        yield end_line(count)

    def _artifact_bytes(self, team: str) -> Iterator[Record]:
        if self._bytes is None:
            return
        for artifact_id in self._bytes.ids(team):
            yield {
                "kind": ARTIFACT_BYTES_KIND,
                "artifact_id": artifact_id,
                "base64": base64.b64encode(self._bytes.get(team, artifact_id)).decode(),
            }

    # ------------------------------------------------------------------ import

    def import_file(
        self, path: Path, team: str | None = None, progress: ProgressCallback | None = None
    ) -> ImportReport:
        """Import `path` (into `team`, default the exported team's name).

        The whole file is checked first (`FormatError` naming the first bad line), so a bad
        file writes nothing; then records are written in batches, each one transaction, with
        what is already there left alone: importing twice changes nothing.
        """
        reader = ExportReader(path)
        exported = str(reader.header["team"])
        if reader.header["format_version"] == 1 and reader.header["backend"] == "dynamodb" != (
            self._data.backend
        ):
            # Format 1 held DynamoDB's own items; format 2 holds rows every backend takes.
            raise FormatError(
                1,
                f"the file was exported from the {reader.header['backend']} store in format 1; "
                f"this server runs on {self._data.backend}: export it again with this cairn "
                "(docs/portability.md, 'Across backends')",
            )
        target = team or exported
        _team_folder(self._folders.artifacts, target)  # refuse a bad name before writing
        total = 0
        for number, record in reader.records():
            total += 1
            if record["kind"] == ARTIFACT_BYTES_KIND:
                if not isinstance(record.get("artifact_id"), str) or not isinstance(
                    record.get("base64"), str
                ):
                    raise FormatError(number, "artifact_bytes needs `artifact_id` and `base64`")
                continue
            try:
                self._data.check_record(record)
            except BadRecord as exc:
                raise FormatError(number, str(exc)) from exc
        report = ImportReport(team=target)
        batch: list[Record] = []
        done = 0
        for _, record in reader.records():
            kind = str(record["kind"])
            report.read[kind] = report.read.get(kind, 0) + 1
            if kind == ARTIFACT_BYTES_KIND:
                report.written += self._put_artifact(target, record)
            else:
                batch.append(self._stored_here(target, record))
            done += 1
            if len(batch) >= IMPORT_BATCH:
                report.written += self._data.import_records(target, batch, exported)
                batch = []
                if progress is not None:
                    progress(Progress("records", done, total))
        report.written += self._data.import_records(target, batch, exported)
        if progress is not None:
            progress(Progress("records", done, total))
        if self._reindex is not None:
            report.reindexed = self._reindex(target)
        if self._restore_elsewhere is not None:
            report.restored = self._restore_elsewhere(target)
        return report

    def _stored_here(self, team: str, record: Record) -> Record:
        """An artifact's record naming where this backend keeps its bytes: the file's `storage`
        is where the exporting store kept them (another folder, team or bucket)."""
        if record["kind"] != ARTIFACTS_KIND or self._bytes is None:
            return record
        row = dict(record["row"])
        fields = from_json(row["record"])
        if not isinstance(fields, dict) or fields.get("storage") is None:
            return record
        fields["storage"] = self._bytes.location(team, str(row["id"]))
        row["record"] = to_json(fields)
        return {**record, "row": row}

    def _put_artifact(self, team: str, record: Record) -> int:
        if self._bytes is None:
            return 0
        name = str(record["artifact_id"])
        _checked_name(name, "artifact id")
        return int(self._bytes.put(team, name, base64.b64decode(record["base64"])))

    # ------------------------------------------------------------------ erase

    def delete_team(self, team: str) -> dict[str, int]:
        """Erase `team` everywhere this backend keeps it; how much went, per kind."""
        counts = self._data.delete_team(team)
        if self._forget_tokens is not None:
            self._forget_tokens(team)
        if self._erase_index is not None and (chunks := self._erase_index(team)):
            counts["search_index_chunks"] = chunks
        for kind, root in (
            ("artifact_files", self._folders.artifacts),
            ("inbox_files", self._folders.inbox),
        ):
            folder = _team_folder(root, team)
            if folder is not None and folder.is_dir():
                files = sum(1 for p in folder.rglob("*") if p.is_file())
                shutil.rmtree(folder)
                if files:
                    counts[kind] = files
        if self._erase_elsewhere is not None:
            counts.update(self._erase_elsewhere(team))
        return dict(sorted(counts.items()))
