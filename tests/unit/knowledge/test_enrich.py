"""The enricher: sessions by time and cwd, outcomes, entities, and the optional model's rewrite."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from shared.knowledge.adapters.sqlite import SqliteKnowledgeStores
from shared.knowledge.enrich import (
    SESSION_GAP_MS,
    Enricher,
    command_word,
    entities_of,
    segments,
)
from shared.knowledge.models import Event, KnowledgeNode
from shared.knowledge.ports import ChatModel, ModelUnavailable
from shared.storage.sqlite import Database

T0 = 1_800_000_000_000


class Index:
    def __init__(self) -> None:
        self.nodes: dict[str, KnowledgeNode] = {}

    def index(self, team: str, nodes: Sequence[KnowledgeNode]) -> None:
        self.nodes.update({n.uuid: n for n in nodes})

    def query(self, team: str, text: str, mode: str, limit: int) -> list[tuple[str, float]]:
        return []


def shell(number: int, at: int, command: str, code: int = 0, cwd: str = "/src/app") -> Event:
    return Event(
        id=f"e{number}", source="shell", timestamp=at, command=command, exit_code=code, cwd=cwd
    )


def enricher(
    tmp_path: Path, model: ChatModel | None = None
) -> tuple[Enricher, SqliteKnowledgeStores]:
    stores = SqliteKnowledgeStores(Database(tmp_path / "k.db"))
    return Enricher(stores, stores, stores, Index(), model=lambda: model), stores


def test_sessions_split_on_the_gap_and_the_cwd_and_grow_across_batches(tmp_path: Path) -> None:
    enrich, stores = enricher(tmp_path)
    events = [
        shell(1, T0, "make build"),
        shell(2, T0 + 60_000, "make test", code=2),
        shell(3, T0 + 61_000, "ls", cwd="/src/other"),
        shell(4, T0 + 60_000 + SESSION_GAP_MS + 1, "make deploy"),
    ]
    stores.put_new("t", events[:2])
    first = enrich.enrich("t", ["e1", "e2"])
    stores.put_new("t", events[2:])
    second = enrich.enrich("t", ["e3", "e4"])
    later = T0 + 60_000 + SESSION_GAP_MS + 90_000
    stores.put_new("t", [shell(5, later, "make test", code=1)])
    grown = enrich.enrich("t", ["e5"])
    nodes = {tuple(n.member_event_ids): n for n in stores.recent_nodes("t")}
    assert set(nodes) == {("e1", "e2"), ("e3",), ("e4", "e5")}
    deploy = next(n for n in second if n.member_event_ids == ["e4"])
    assert grown[0].uuid == deploy.uuid  # the session's node grew, same uuid
    assert first[0].outcome == "failure"
    assert nodes[("e4", "e5")].outcome == "failure"
    assert nodes[("e3",)].outcome == "success"


def test_entities_are_parsed_from_commands() -> None:
    event = Event(
        id="x",
        source="shell",
        timestamp=T0,
        command="AWS_PROFILE=prod sudo aws s3 cp ./dist/app.tar.gz s3://b/ && "
        "ssh deploy@web1.acme.io 'systemctl restart nginx' && echo $HOME_DIR",
        cwd="/src/app",
        repo_root="/src/app",
        git_repo="acme/app",
    )
    found = {(s.type, s.canonical) for s in entities_of(event)}
    assert {
        ("tool", "aws"),
        ("tool", "ssh"),
        ("env_var", "AWS_PROFILE"),
        ("env_var", "HOME_DIR"),
        ("file", "dist/app.tar.gz"),
        ("host", "web1.acme.io"),
        ("service", "aws:s3"),
        ("repo", "acme/app"),
        ("project", "app"),
        ("concept", "remote operations"),
    } <= found
    assert command_word("time  FOO=1 /usr/bin/python -m x") == "python"


class Rewrite:
    name = "test-model"

    def __init__(self, reply: str | Exception) -> None:
        self.reply = reply

    def complete(self, system: str, prompt: str) -> str:
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply


@pytest.mark.parametrize(
    ("reply", "summary", "by"),
    [
        ('{"summary": "Fixed the build", "intent": "building"}', "Fixed the build", "test-model"),
        (ModelUnavailable("down"), None, "deterministic"),
        ("not json", None, "deterministic"),
    ],
)
def test_a_configured_model_rewrites_the_summary_and_a_failing_one_keeps_the_draft(
    tmp_path: Path, reply: str | Exception, summary: str | None, by: str
) -> None:
    enrich, stores = enricher(tmp_path, Rewrite(reply))
    stores.put_new("t", [shell(1, T0, "make build")])
    (node,) = enrich.enrich("t", ["e1"])
    assert node.enriched_by == by
    assert node.summary == (summary or "Ran 1 command in app: `make build`")


def test_a_quoted_separator_does_not_make_a_tool() -> None:
    event = Event(
        id="q",
        source="shell",
        timestamp=T0,
        command="""python3 -c "import sys; sys.exit(3)" && echo 'a | b' | tee out.log & wait""",
        cwd="/src/app",
    )
    tools = {s.canonical for s in entities_of(event) if s.type == "tool"}
    assert tools == {"python3", "echo", "tee", "wait"}
    assert segments("cmd 2>&1 | grep x; ls &> log") == ["cmd 2>&1", "grep x", "ls &> log"]
