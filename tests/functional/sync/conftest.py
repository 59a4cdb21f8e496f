"""Connector fixtures: the sync service on the embedded database (local mode, a hashing
embedder), and git repositories made with dulwich (no git binary needed)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from shared import runtime
from shared.auth.principal import Principal
from shared.config.settings import Settings
from shared.connectors.kinds import SourceContext
from shared.memory.wiring import build_memory_service, build_memory_store
from shared.search.adapters.embedded import EmbeddedIndex
from shared.search.adapters.sqlite_documents import SqliteDocumentStore
from shared.search.models import SearchInput
from shared.search.service import SearchService
from shared.sync.adapters.inbox import FolderInbox
from shared.sync.adapters.sqlite import SqliteSyncState
from shared.sync.adapters.sqlite_connectors import SqliteConnectorStore
from shared.sync.service import SyncService
from tests.functional.conftest import Harness, no_error
from tests.functional.test_sync_schedules import in_aws, local  # noqa: F401  (fixtures)
from tests.unit.search.support import HashingEmbedder


class PausableEmbedder(HashingEmbedder):
    """The hashing embedder, which can hold a sync in the middle of its indexing: after
    `pause()`, the next `embed` sets `entered` and waits for `resume`."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.resume = threading.Event()
        self._paused = False

    def pause(self) -> None:
        self._paused = True

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        if self._paused:
            self._paused = False
            self.entered.set()
            assert self.resume.wait(30), "the test never resumed the sync"
        return super().embed(texts)


@dataclass
class Connectors:
    sync: SyncService
    search: SearchService
    data_dir: Path
    embedder: PausableEmbedder

    def principal(self, team: str = "local") -> Principal:
        return Principal(team=team, token_id="tok", token_name="t", scopes=frozenset({"sync"}))

    def run(self, source: str | None = None, team: str = "local") -> dict[str, Any]:
        out = self.sync.sync(self.principal(team), source=source, lock=True, background=False)
        return out.model_dump(mode="json", exclude_none=True)

    def found(self, query: str, source: str, team: str = "local") -> list[str]:
        """source_ids of the documents `search` returns for `query` within `source`."""
        page = self.search.search_page(
            team, SearchInput(query=query, source=source, limit=50), may_read_memory=False
        )
        ids = []
        for result in page.results:
            entity = self.search.documents.get_entity(team, result.entity_id)
            if entity is not None:
                ids.append(entity.source_id)
        return ids

    def source_ids(self, source: str, team: str = "local") -> set[str]:
        return {e.source_id for e in self.search.documents.iter_entities(team, source)}

    def status(self, source: str, team: str = "local") -> dict[str, Any]:
        report = self.sync.status_report(self.principal(team), None)
        (one,) = [c for c in report.connectors if c.source == source]
        return one.model_dump(mode="json", exclude_none=True)


@pytest.fixture
def connectors(tmp_path: Path) -> Iterator[Connectors]:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    runtime.configure(
        Settings(environment="local", storage="sqlite", token_pepper="p" * 32, data_dir=data_dir)
    )
    embedder = PausableEmbedder()
    search = SearchService(
        SqliteDocumentStore(runtime.database()),
        EmbeddedIndex(data_dir / "index", embedder.dimensions),
        embedder,
    )
    sync = SyncService(
        search,
        build_memory_service(),
        SqliteSyncState(runtime.database()),
        FolderInbox(data_dir / "inbox"),
        memory_store=build_memory_store(),
        connectors=SqliteConnectorStore(runtime.database()),
        source_context=SourceContext(cache_dir=data_dir / "connectors", local=True),
    )
    yield Connectors(sync, search, data_dir, embedder)
    runtime.configure(Settings())


class GitRepo:
    """A repository on disk, committed to with dulwich."""

    def __init__(self, path: Path, branch: str = "main") -> None:
        from dulwich import porcelain

        self.path = path
        path.mkdir(parents=True)
        self.repo = porcelain.init(str(path))
        self.repo.refs.set_symbolic_ref(b"HEAD", f"refs/heads/{branch}".encode())

    @property
    def url(self) -> str:
        return self.path.resolve().as_uri()

    def write(self, files: dict[str, str | bytes | None], message: str = "change") -> str:
        """Write (or, for None, delete) files and commit them; the new commit's id."""
        from dulwich import porcelain

        for name, content in files.items():
            target = self.path / name
            if content is None:
                porcelain.remove(self.repo, [str(target)])
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content)
            porcelain.add(self.repo, [str(target)])
        identity = b"Test <test@example.com>"
        commit = porcelain.commit(self.repo, message.encode(), author=identity, committer=identity)
        return commit.decode() if isinstance(commit, bytes) else str(commit)

    def head(self, branch: str = "main") -> bytes:
        return bytes(self.repo.refs[f"refs/heads/{branch}".encode()])

    def reset_hard(self, commit: bytes) -> None:
        """The current branch back to `commit`, work tree included (a rewrite of history)."""
        from dulwich import porcelain

        porcelain.reset(self.repo, "hard", commit)

    def close(self) -> None:
        self.repo.close()


def guide_repo(path: Path, text: str = "The lighthouse keeper logs the tides.") -> GitRepo:
    """A repository of one committed file, `guide.md`, whose text is `text`."""
    repo = GitRepo(path)
    repo.write({"guide.md": f"# Guide\n\n{text}\n"})
    return repo


def scheduled_docs(harness: Harness, path: Path) -> tuple[GitRepo, str]:
    """Team alpha's git connector `docs` (a `guide_repo` at `path`), scheduled hourly; the
    repository and a token of alpha."""
    from shared.app.sync_service import build_sync_service

    repo = guide_repo(path)
    build_sync_service().connector_add("alpha", name="docs", kind="git", config={"url": repo.url})
    token = harness.token(team="alpha")
    no_error(harness.call(token, "sync_schedule_set", {"every": "1h", "source": "docs"}))
    return repo, token
