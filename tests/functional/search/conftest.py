"""Functional search fixtures: moto DynamoDB documents table, embedded index, hashing embedder."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from shared import runtime
from shared.auth.principal import Principal
from shared.config import names
from shared.config.settings import Settings
from shared.search.adapters.dynamodb import DynamoDocumentStore
from shared.search.adapters.embedded import EmbeddedIndex
from shared.search.service import SearchService
from shared.search.tools import GROUP
from shared.tools.dispatch import execute
from shared.tools.envelope import Envelope, Reply
from shared.tools.registry import ToolGroup
from tests.unit.search.support import HashingEmbedder

ALL_SEARCH_SCOPES = ("search", "get", "sync", "memory.read")


@dataclass
class SearchHarness:
    service: SearchService
    embedder: HashingEmbedder
    clock: list[float]
    make_service: Callable[[Path], SearchService]

    def principal(
        self, team: str = "alpha", scopes: tuple[str, ...] = ALL_SEARCH_SCOPES
    ) -> Principal:
        return Principal(team=team, token_id="tok", token_name="t", scopes=frozenset(scopes))

    def reply(
        self,
        tool: str,
        arguments: dict[str, Any],
        team: str = "alpha",
        scopes: tuple[str, ...] = ALL_SEARCH_SCOPES,
    ) -> Reply:
        """Run a tool the way a group function does (validate, execute, dump)."""
        group = ToolGroup(name=GROUP.name, build_service=lambda: self.service, tools=GROUP.tools)
        envelope = Envelope(
            tool=tool, arguments=arguments, principal=self.principal(team, scopes), request_id="r"
        )
        return execute(group, envelope)

    def call(self, tool: str, arguments: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        reply = self.reply(tool, arguments, **kwargs)
        assert reply.error is None, reply.error
        assert reply.result is not None
        return reply.result


@pytest.fixture
def search(aws: Settings, tmp_path: Path) -> SearchHarness:
    embedder = HashingEmbedder()
    clock = [1_800_000_000.0]

    def make(directory: Path) -> SearchService:
        return SearchService(
            DynamoDocumentStore(runtime.table(names.TABLE_DOCUMENTS)),
            EmbeddedIndex(directory, embedder.dimensions),
            embedder,
            clock=lambda: clock[0],
        )

    return SearchHarness(make(tmp_path / "index"), embedder, clock, make)
