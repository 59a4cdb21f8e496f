"""The `local_files` connector: index a folder of text files, incrementally.

`index_path` reads every supported file under a folder, and hands them to the search service,
which skips any file whose content hash is unchanged (no re-chunking, no re-embedding).
Files that disappeared since the last run of the same folder are tombstoned and leave the index.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from shared.search.models import DocumentInput
from shared.search.ports import Embedder, EmbedderWrapper, TeamScopedEmbedder
from shared.search.service import SearchService

if TYPE_CHECKING:
    from shared.search.ports import Vectors

DEFAULT_SOURCE = "local_files"
SUFFIXES = frozenset(
    {".md", ".markdown", ".txt", ".text", ".rst", ".json", ".csv", ".yaml", ".yml"}
)
MAX_FILE_BYTES = 5 * 1024 * 1024
_TITLE = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_FRONT_MATTER_TITLE = re.compile(
    r"\A---\s*\n(?:.*\n)*?title:\s*[\"']?(.+?)[\"']?\s*\n(?:.*\n)*?---"
)


@dataclass
class IndexStats:
    """What one `index_path` run did."""

    scanned: int = 0
    indexed: int = 0
    unchanged: int = 0
    deleted: int = 0
    skipped: int = 0
    chunks: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class Progress:
    """How far an `index_path` run is: `done` of `total` in `stage`.

    Stages: `files` (read), `embedding` (chunks embedded; the total grows as each batch of
    documents is chunked), `cleanup` (documents of this folder checked for deletion).
    """

    stage: str
    done: int
    total: int


ProgressCallback = Callable[[Progress], None]
EMBED_SLICE = 32  # texts per reported embedding step: a model batch (16) per core of two


class ProgressEmbedder(EmbedderWrapper):
    """An embedder that embeds in slices and reports after each, for `cairn index`'s bar."""

    def __init__(self, inner: Embedder, report: ProgressCallback, counts: list[int]) -> None:
        super().__init__(inner)
        self._report = report
        self._counts = counts  # [done, total], shared with the team views of this embedder

    def for_team(self, team: str) -> Embedder:
        """The inner embedder's view for `team` (its cache keys), still reporting."""
        if isinstance(self._inner, TeamScopedEmbedder):
            return ProgressEmbedder(self._inner.for_team(team), self._report, self._counts)
        return self

    def embed(self, texts: list[str]) -> Vectors:
        """Vectors in input order; slices of similar length keep padding low."""
        import numpy as np

        self._counts[1] += len(texts)
        self._report(Progress("embedding", self._counts[0], self._counts[1]))
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for start in range(0, len(order), EMBED_SLICE):
            part = order[start : start + EMBED_SLICE]
            out[part] = self._inner.embed([texts[i] for i in part])
            self._counts[0] += len(part)
            self._report(Progress("embedding", self._counts[0], self._counts[1]))
        return out


def _files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file()
        and p.suffix.lower() in SUFFIXES
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )


def _title(path: Path, text: str) -> str:
    if path.suffix.lower() in {".md", ".markdown"}:
        if match := _FRONT_MATTER_TITLE.match(text):
            return match.group(1).strip()
        if match := _TITLE.search(text):
            return match.group(1).strip()
    return path.stem


def _text(path: Path, raw: str) -> str:
    if path.suffix.lower() == ".json":
        try:
            # Pretty-printed JSON chunks on structure and reads as key: value lines.
            return json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
        except ValueError:
            return raw
    return raw


def read_document(path: Path, root: Path, source: str) -> DocumentInput | None:
    """A file as a document (None when it is too large or not text)."""
    if path.stat().st_size > MAX_FILE_BYTES:
        return None
    try:
        raw = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return None
    source_id = path.name if root.is_file() else path.relative_to(root).as_posix()
    return DocumentInput(
        source=source,
        source_id=source_id,
        title=_title(path, raw),
        text=_text(path, raw),
        uri=path.resolve().as_uri(),
    )


def index_path(
    path: str | Path,
    team: str,
    source: str = DEFAULT_SOURCE,
    *,
    service: SearchService | None = None,
    progress: ProgressCallback | None = None,
) -> IndexStats:
    """Index the files under `path` for `team` as `source`; returns what changed.

    `progress` is told how far reading, embedding and cleanup are (`Progress`).

    >>> index_path("notes/", team="local")  # doctest: +SKIP
    IndexStats(scanned=12, indexed=1, unchanged=11, deleted=0, skipped=0, chunks=3)
    """
    if service is None:
        from shared.search.wiring import build_search_service

        service = build_search_service()
    root = Path(path).expanduser().resolve()
    if not root.exists():
        raise FileNotFoundError(f"`path` does not exist: {root}")
    report: ProgressCallback = progress or (lambda _: None)
    if progress is not None:
        # The same store and index; only the embedder is wrapped, to report each slice.
        service = SearchService(
            service.documents,
            service.index,
            ProgressEmbedder(service.embedder, progress, [0, 0]),
        )
    stats = IndexStats()
    documents: list[DocumentInput] = []
    files = _files(root)
    report(Progress("files", 0, len(files)))
    for file in files:
        stats.scanned += 1
        document = read_document(file, root, source)
        if document is None:
            stats.skipped += 1
        else:
            documents.append(document)
        report(Progress("files", stats.scanned, len(files)))
    result = service.upsert_documents(team, documents)
    stats.indexed, stats.unchanged, stats.chunks = result.indexed, result.unchanged, result.chunks
    # Only files of this folder can have disappeared from it: other folders indexed under the
    # same source keep their documents.
    prefix = root.as_uri() + ("" if root.is_file() else "/")
    seen = {d.source_id for d in documents}
    entities = list(service.documents.iter_entities(team, source))
    report(Progress("cleanup", 0, len(entities)))
    for entity in entities:
        under_root = entity.uri is not None and (
            entity.uri == root.as_uri() or entity.uri.startswith(prefix)
        )
        if under_root and entity.source_id not in seen and service.delete_document(team, entity.id):
            stats.deleted += 1
    report(Progress("cleanup", len(entities), len(entities)))
    return stats
