"""The knowledge group through the gateway (in-process), on moto DynamoDB, a hashing embedder
and the embedded index, with a fixed clock and inline enrichment (deterministic)."""

from __future__ import annotations

import json
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from shared.app.groups import load_group
from shared.config import names
from shared.config.settings import Settings
from shared.knowledge.adapters.search_index import SearchNodeIndex
from shared.knowledge.ports import ChatModel
from shared.knowledge.service import KnowledgeService
from shared.knowledge.tools import GROUP
from shared.knowledge.wiring import build_inline_service, build_stores
from shared.search.adapters.embedded import EmbeddedIndex
from shared.search.service import SearchService
from shared.search.wiring import build_document_store
from tests.functional.conftest import Harness, on_storage
from tests.functional.knowledge.corpus import NOW_MS, generate
from tests.unit.search.support import HashingEmbedder


@dataclass
class Knowledge:
    harness: Harness
    service: KnowledgeService
    model: list[ChatModel | None]

    def token(self, team: str = "alpha", scopes: tuple[str, ...] = ("admin",)) -> str:
        return self.harness.token(team=team, scopes=scopes)

    def call(self, token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self.harness.call(token, tool, arguments)

    def ok(self, token: str, tool: str, arguments: dict[str, Any]) -> Any:
        """The tool's seed-shaped value: the text block parsed (JSON) or as is (a string)."""
        result = self.call(token, tool, arguments)
        assert result["isError"] is False, result
        text = result["content"][0]["text"]
        try:
            return json.loads(text)
        except ValueError:
            return text

    def ingest(self, token: str, events: list[dict[str, Any]]) -> dict[str, Any]:
        totals = {"accepted": 0, "duplicates": 0, "redacted": 0}
        for start in range(0, len(events), 200):
            result = self.call(token, "ingest_events", {"events": events[start : start + 200]})
            assert result["isError"] is False, result
            for key in totals:
                totals[key] += result["structuredContent"][key]
        return totals


def build_service(tmp_path: Path, model: list[ChatModel | None]) -> KnowledgeService:
    stores = build_stores()
    embedder = HashingEmbedder(dimensions=256)
    search = SearchService(
        build_document_store(),
        EmbeddedIndex(tmp_path / "index", embedder.dimensions),
        embedder,
        clock=lambda: NOW_MS / 1000,
    )
    return build_inline_service(
        stores, SearchNodeIndex(search), clock=lambda: NOW_MS / 1000, model=lambda: model[0]
    )


def _knowledge(tmp_path: Path, storage: str) -> Generator[Knowledge, None, None]:
    """A fresh knowledge group on `storage` (moto's fresh tables for `dynamodb`)."""
    settings = Settings(
        environment="test", storage=storage, token_pepper="knowledge", data_dir=tmp_path
    )
    with on_storage(settings):
        model: list[ChatModel | None] = [None]
        service = build_service(tmp_path, model)
        # Assembled by the root first: its service factory is bound then, and is what is put
        # back (saving the unbound one would leave the group unusable for every later test).
        load_group(names.GROUP_KNOWLEDGE)
        original = GROUP.build_service
        GROUP.build_service = lambda: service
        try:
            yield Knowledge(Harness.over(settings), service, model)
        finally:
            GROUP.build_service = original


@pytest.fixture
def knowledge(tmp_path: Path) -> Iterator[Knowledge]:
    """A fresh, empty knowledge group (on moto DynamoDB) for tests that write."""
    yield from _knowledge(tmp_path, "dynamodb")


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Knowledge, str]]:
    """The fixture corpus ingested and enriched once per module (SQLite stores: the DynamoDB
    adapter passes the same contract suite), for the tests that only read."""
    knowledge = next(gen := _knowledge(tmp_path_factory.mktemp("knowledge"), "sqlite"))
    token = knowledge.token("alpha")
    totals = knowledge.ingest(token, generate())
    assert totals["accepted"] == len(generate())
    yield knowledge, token
    gen.close()
