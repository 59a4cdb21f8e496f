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
from typing import Any

from shared.portability.format import ExportReader, FormatError, end_line, header, line
from shared.storage.team_data import TOKEN_KIND, BadRecord, Record, TeamData

ARTIFACT_BYTES_KIND = "artifact_bytes"
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
        }


@dataclass(frozen=True)
class TeamFolders:
    """Local folders holding a team's files in `<root>/<team>/…` (None: not on this backend)."""

    artifacts: Path | None = None
    inbox: Path | None = None


def _team_folder(root: Path | None, team: str) -> Path | None:
    if root is None:
        return None
    if team in _UNSAFE or "/" in team or "\\" in team:
        raise ValueError(f"unusable team name for a folder: {team!r}")
    return root / team


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
    ) -> None:
        self._data = data
        self._folders = folders
        self._erase_index = erase_index
        self._reindex = reindex
        self._forget_tokens = forget_tokens
        self._erase_elsewhere = erase_elsewhere

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
        folder = _team_folder(self._folders.artifacts, team)
        if folder is None or not folder.is_dir():
            return
        for path in sorted(folder.iterdir()):
            if path.is_file():
                yield {
                    "kind": ARTIFACT_BYTES_KIND,
                    "artifact_id": path.name,
                    "base64": base64.b64encode(path.read_bytes()).decode(),
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
        if reader.header["backend"] != self._data.backend:
            raise FormatError(
                1,
                f"the file was exported from the {reader.header['backend']} store; this "
                f"server runs on {self._data.backend} (docs/portability.md, 'Across backends')",
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
                batch.append(record)
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
        return report

    def _put_artifact(self, team: str, record: Record) -> int:
        folder = _team_folder(self._folders.artifacts, team)
        if folder is None:
            return 0
        name = str(record["artifact_id"])
        if name in _UNSAFE or "/" in name or "\\" in name:
            raise BadRecord(f"unusable artifact id {name!r}")
        path = folder / name
        if path.exists():
            return 0
        folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{name}.partial")
        partial.write_bytes(base64.b64decode(record["base64"]))
        os.replace(partial, path)  # whole or absent
        return 1

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
