"""Seed 003's nine tools over the fixture corpus, through the gateway, with a fixed clock."""

from __future__ import annotations

from typing import Any

import pytest

from shared.auth.principal import Principal
from shared.knowledge.extractive import node_sentences
from shared.knowledge.models import AskInput
from shared.knowledge.ports import ModelUnavailable
from shared.knowledge.service import ASK_MIN_RELEVANCE
from tests.functional.knowledge.conftest import Knowledge
from tests.functional.knowledge.corpus import NOW_MS, PROJECTS, QUESTIONS
from tests.jsonrpc import tools_call


def test_ingest_is_idempotent_by_event_id(knowledge: Knowledge) -> None:
    token = knowledge.token()
    event = {"id": "e1", "source": "shell", "timestamp": NOW_MS - 1000, "command": "make test"}
    first = knowledge.call(token, "ingest_events", {"events": [event]})
    again = knowledge.call(token, "ingest_events", {"events": [{**event, "command": "rm -rf /"}]})
    assert first["structuredContent"]["accepted"] == 1
    assert again["structuredContent"] == {"accepted": 0, "duplicates": 1, "redacted": 0}
    found = knowledge.ok(token, "search_events", {"query": ""})
    assert [e["summary"] for e in found] == ["make test"]


def test_ingest_needs_the_ingest_scope_and_reading_needs_knowledge(knowledge: Knowledge) -> None:
    reader = knowledge.token(scopes=("knowledge",))
    writer = knowledge.token(scopes=("ingest",))
    event = {"id": "e1", "source": "shell", "timestamp": NOW_MS - 1000, "command": "ls"}
    refused = knowledge.harness.post(
        tools_call("ingest_events", {"events": [event]}),
        reader,
    )
    assert refused.status == 403
    assert refused.body is not None
    assert refused.body["error"]["code"] == -32002
    assert knowledge.call(writer, "ingest_events", {"events": [event]})["isError"] is False
    assert len(knowledge.ok(reader, "search_events", {})) == 1


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ({"id": "x", "source": "shell", "timestamp": NOW_MS}, "events"),  # no command
        ({"id": "x", "source": "shell", "timestamp": 1_700_000_000, "command": "ls"}, "events"),
        ({"id": "a b", "source": "shell", "timestamp": NOW_MS, "command": "ls"}, "events"),
        ({"id": "x", "source": "irc", "timestamp": NOW_MS, "command": "ls"}, "events"),
        ({"id": "x", "source": "shell", "timestamp": NOW_MS, "command": "x" * 20_000}, "events"),
    ],
)
def test_bad_events_are_refused_naming_the_field_and_nothing_is_stored(
    knowledge: Knowledge, event: dict[str, Any], field: str
) -> None:
    token = knowledge.token()
    good = {"id": "ok", "source": "shell", "timestamp": NOW_MS - 1, "command": "ls"}
    result = knowledge.call(token, "ingest_events", {"events": [good, event]})
    assert result["isError"] is True
    assert field in result["content"][0]["text"]
    assert knowledge.ok(token, "search_events", {}) == []


def test_a_batch_over_500_events_is_refused(knowledge: Knowledge) -> None:
    token = knowledge.token()
    events = [
        {"id": f"e{i}", "source": "shell", "timestamp": NOW_MS - i - 1, "command": "ls"}
        for i in range(501)
    ]
    result = knowledge.call(token, "ingest_events", {"events": events})
    assert result["isError"] is True
    assert "events" in result["content"][0]["text"]


def test_search_events_projects_each_source_into_the_seed_envelope(
    loaded: tuple[Knowledge, str],
) -> None:
    knowledge, corpus = loaded
    shell = knowledge.ok(corpus, "search_events", {"query": "cargo clippy", "limit": 1})[0]
    agent = knowledge.ok(corpus, "search_events", {"source": "claude", "limit": 1})[0]
    visit = knowledge.ok(corpus, "search_events", {"source": "browser", "limit": 1})[0]
    assert set(shell) == {"id", "source", "timestamp", "summary", "cwd", "detail", "git_branch"}
    assert shell["summary"].startswith("cargo clippy")
    assert shell["detail"].startswith("exit=")
    assert shell["cwd"] == PROJECTS["gateway"][0]
    assert agent["detail"].startswith("messages=")
    assert " tools=" in agent["detail"]
    assert " — " in visit["summary"]
    assert visit["detail"].startswith("dwell=")
    assert visit["cwd"] == ""
    assert visit["git_branch"] == ""


def test_search_events_is_newest_first_and_limit_is_clamped(loaded: tuple[Knowledge, str]) -> None:
    knowledge, corpus = loaded
    events = knowledge.ok(corpus, "search_events", {"limit": 10_000})
    stamps = [e["timestamp"] for e in events]
    assert stamps == sorted(stamps, reverse=True)
    assert len(events) == 100  # capped, silently


def test_filters_combine_with_and(loaded: tuple[Knowledge, str]) -> None:
    knowledge, corpus = loaded
    both = knowledge.ok(
        corpus, "search_events", {"project": "gateway", "branch": "main", "source": "shell"}
    )
    assert both
    assert all(e["cwd"].endswith("gateway") and e["git_branch"] == "main" for e in both)
    branch_only = knowledge.ok(corpus, "search_events", {"branch": "fix/rate-limit"})
    assert {e["cwd"] for e in branch_only if e["source"] != "browser"} == {PROJECTS["gateway"][0]}


def test_project_is_a_substring_of_cwd_or_git_repo(loaded: tuple[Knowledge, str]) -> None:
    knowledge, corpus = loaded
    by_repo = knowledge.ok(corpus, "search_events", {"project": "acme/infr", "limit": 100})
    by_cwd = knowledge.ok(corpus, "search_events", {"project": "src/infra", "limit": 100})
    assert by_repo
    assert {e["cwd"] for e in by_repo} == {PROJECTS["infra"][0]}
    assert [e["id"] for e in by_cwd] == [e["id"] for e in by_repo]


def test_source_claude_covers_every_agentic_harness(loaded: tuple[Knowledge, str]) -> None:
    knowledge, corpus = loaded
    sessions = knowledge.ok(corpus, "search_events", {"source": "claude", "limit": 100})
    assert len(sessions) == 32
    texts = " ".join(s["summary"] for s in sessions)
    assert "token bucket" in texts
    assert "cdk-nag" in texts
    nodes = knowledge.ok(
        corpus, "search_hybrid", {"query": "rate limiter", "source": "claude", "limit": 50}
    )
    assert nodes
    assert all(n["linked_claude_session_ids"] for n in nodes)


def test_since_is_a_window_and_a_malformed_since_is_a_clear_error(
    loaded: tuple[Knowledge, str],
) -> None:
    knowledge, corpus = loaded
    recent = knowledge.ok(corpus, "search_events", {"since": "2d", "limit": 100})
    assert recent
    assert all(e["timestamp"] >= NOW_MS - 2 * 86_400_000 for e in recent)
    assert len(recent) < len(knowledge.ok(corpus, "search_events", {"limit": 100}))
    for bad in ("30 minutes", "30min", "7", "7D"):
        result = knowledge.call(corpus, "search_hybrid", {"query": "x", "since": bad})
        assert result["isError"] is True
        text = result["content"][0]["text"]
        assert "`since`" in text
        assert "<digits><unit>" in text


def test_probe_events_never_appear_in_any_tool(loaded: tuple[Knowledge, str]) -> None:
    knowledge, corpus = loaded
    assert not [
        e for e in knowledge.ok(corpus, "search_events", {"limit": 100}) if "probe" in e["summary"]
    ]
    assert knowledge.ok(corpus, "search_events", {"query": "hippo-probe"}) == []
    for tool in ("search_hybrid", "search_knowledge"):
        nodes = knowledge.ok(corpus, tool, {"query": "hippo-probe echo", "limit": 100})
        assert not [n for n in nodes if "probe" in n["embed_text"]]
    block = knowledge.ok(corpus, "get_context", {"query": "hippo-probe echo"})
    assert "probe" not in block.split("\n", 1)[1]


def test_enrichment_makes_sessions_with_summaries_and_outcomes(
    loaded: tuple[Knowledge, str],
) -> None:
    knowledge, corpus = loaded
    nodes = knowledge.ok(corpus, "search_hybrid", {"query": "pytest test_invoices", "limit": 3})
    node = nodes[0]
    assert set(node) == {
        "uuid", "score", "summary", "intent", "outcome", "tags", "embed_text", "cwd",
        "git_branch", "captured_at", "linked_event_ids", "linked_claude_session_ids",
        "linked_browser_event_ids",
    }  # fmt: skip
    # One session: fail, edit, pass — three commands within the gap, one node.
    assert len(node["linked_event_ids"]) == 3
    assert node["outcome"] == "partial"
    assert node["intent"] == "testing"
    assert "pytest" in node["summary"]
    assert node["cwd"] == PROJECTS["billing"][0]
    assert node["linked_claude_session_ids"] == []
    assert node["linked_browser_event_ids"] == []


def test_search_hybrid_modes_and_the_entity_filter(loaded: tuple[Knowledge, str]) -> None:
    knowledge, corpus = loaded
    for mode in ("hybrid", "semantic", "lexical"):
        found = knowledge.ok(corpus, "search_hybrid", {"query": "terraform apply", "mode": mode})
        assert found, mode
        assert "terraform" in found[0]["summary"], mode
    recent = knowledge.ok(corpus, "search_hybrid", {"query": "x", "mode": "recent", "limit": 5})
    stamps = [n["captured_at"] for n in recent]
    assert len(recent) == 5
    assert stamps == sorted(stamps, reverse=True)
    with_entity = knowledge.ok(
        corpus, "search_hybrid", {"query": "restart", "entity": "nginx", "limit": 20}
    )
    assert with_entity
    assert all("nginx" in n["embed_text"] for n in with_entity)


def test_search_knowledge_goes_lexical_under_filters(loaded: tuple[Knowledge, str]) -> None:
    knowledge, corpus = loaded
    semantic = knowledge.ok(corpus, "search_knowledge", {"query": "alembic upgrade"})
    filtered = knowledge.ok(
        corpus, "search_knowledge", {"query": "alembic upgrade", "project": "billing"}
    )
    assert semantic
    assert "alembic" in semantic[0]["embed_text"]
    assert filtered
    assert all("alembic" in n["embed_text"] for n in filtered)
    assert all(0 < n["score"] <= 1 for n in filtered)


def test_get_context_renders_the_seed_block(loaded: tuple[Knowledge, str]) -> None:
    knowledge, corpus = loaded
    block = knowledge.ok(corpus, "get_context", {"query": "kubectl rollout restart", "limit": 2})
    assert block.startswith("# Hippo context for: kubectl rollout restart\n")
    assert "## [1] " in block
    assert "- **Outcome:** " in block
    assert "- **uuid:** `kn_" in block
    assert "## [3]" not in block
    empty = knowledge.ok(corpus, "get_context", {"query": "zzqx", "project": "nope"})
    assert empty == "# Hippo context for: zzqx\n\n_No relevant knowledge found._"


def test_ask_without_a_model_is_extractive_and_cites_sources(loaded: tuple[Knowledge, str]) -> None:
    knowledge, corpus = loaded
    answer = knowledge.ok(corpus, "ask", {"question": "how did we fix the invoice rounding bug"})
    body, _, sources = answer.partition("\n\nSources:\n")
    assert "Extractive answer" in body
    assert "rounding" in body
    assert sources.startswith("1. [")
    assert "%] " in sources


class _Down:
    name = "openai:llama3@http://127.0.0.1:9"

    def complete(self, system: str, prompt: str) -> str:
        raise ModelUnavailable("connection refused")


class _Echo:
    name = "test"

    def complete(self, system: str, prompt: str) -> str:
        return "Synthesized: " + prompt.splitlines()[2][:40]


def test_ask_with_a_model_synthesizes_and_an_unreachable_one_is_an_error_string(
    loaded: tuple[Knowledge, str],
) -> None:
    knowledge, corpus = loaded
    knowledge.model[0] = _Echo()
    answer = knowledge.ok(corpus, "ask", {"question": "terraform apply"})
    assert answer.startswith("Synthesized: ")
    assert "\n\nSources:\n1. [" in answer
    knowledge.model[0] = _Down()
    result = knowledge.call(corpus, "ask", {"question": "terraform apply"})
    assert result["isError"] is False
    assert result["content"][0]["text"].startswith("Error:")


def test_entities_are_extracted_with_canonical_names(loaded: tuple[Knowledge, str]) -> None:
    knowledge, corpus = loaded
    everything = knowledge.ok(corpus, "get_entities", {"limit": 1000})
    kinds = {e["type"] for e in everything}
    assert {"project", "file", "tool", "service", "repo", "host", "concept", "domain"} <= kinds
    files = knowledge.ok(corpus, "get_entities", {"type": "file", "query": "invoices"})
    assert ("src/billing/invoices.py", "src/billing/invoices.py") in {
        (f["name"], f["canonical"]) for f in files
    }
    hosts = {e["canonical"] for e in knowledge.ok(corpus, "get_entities", {"type": "host"})}
    assert "bastion.acme.io" in hosts
    scoped = knowledge.ok(corpus, "get_entities", {"type": "tool", "project": "gateway"})
    assert "cargo" in {e["canonical"] for e in scoped}
    assert "terraform" not in {e["canonical"] for e in scoped}
    bad = knowledge.call(corpus, "get_entities", {"type": "planet"})
    assert bad["isError"] is True
    assert "`type`" in bad["content"][0]["text"]


def test_list_projects_most_recent_first(loaded: tuple[Knowledge, str]) -> None:
    knowledge, corpus = loaded
    projects = knowledge.ok(corpus, "list_projects", {})
    assert {(p["git_repo"], p["cwd_root"]) for p in projects} == {
        (repo, cwd) for cwd, repo in PROJECTS.values()
    }
    stamps = [p["last_seen"] for p in projects]
    assert stamps == sorted(stamps, reverse=True)


def test_teams_never_see_each_others_knowledge(loaded: tuple[Knowledge, str]) -> None:
    knowledge, _ = loaded
    beta = knowledge.token("beta")
    for tool, arguments in (
        ("search_events", {}),
        ("search_hybrid", {"query": "terraform"}),
        ("search_knowledge", {"query": "terraform"}),
        ("get_entities", {}),
        ("list_projects", {}),
        ("get_lessons", {}),
    ):
        assert knowledge.ok(beta, tool, arguments) == [], tool
    assert "_No relevant knowledge found._" in knowledge.ok(beta, "get_context", {"query": "x"})
    # The same event id in another team is a different event.
    event = {"id": "sh-00001", "source": "shell", "timestamp": NOW_MS - 5, "command": "ls"}
    assert knowledge.ingest(beta, [event])["accepted"] == 1


def test_text_block_is_the_seed_value_and_structured_content_wraps_it(
    loaded: tuple[Knowledge, str],
) -> None:
    knowledge, corpus = loaded
    result = knowledge.call(corpus, "search_events", {"limit": 2})
    assert result["content"][0]["text"].startswith("[")
    assert list(result["structuredContent"]) == ["events"]
    ask = knowledge.call(corpus, "ask", {"question": "terraform"})
    assert ask["content"][0]["text"] == ask["structuredContent"]["answer"]


def test_labelled_questions_find_their_sessions(loaded: tuple[Knowledge, str]) -> None:
    knowledge, corpus = loaded
    hits = 0
    for question, marker in QUESTIONS:
        found = knowledge.ok(corpus, "search_hybrid", {"query": question, "limit": 10})
        hits += any(marker.lower() in n["embed_text"].lower() for n in found)
    # The hashing embedder is a bag of words: the bench measures MiniLM's recall.
    assert hits >= len(QUESTIONS) * 0.8


def _quoted(answer: str) -> list[tuple[str, int]]:
    body = answer.split("\n\nSources:\n", 1)[0]
    lines = [line[2:] for line in body.splitlines() if line.startswith("- ")]
    return [(s, int(n.rstrip("]"))) for s, _, n in (line.rpartition(" [") for line in lines)]


def _source_scores(answer: str) -> list[int]:
    sources = answer.split("\n\nSources:\n", 1)[1]
    return [
        int(line.split("[", 1)[1].split("%", 1)[0]) for line in sources.splitlines() if "%]" in line
    ]


def test_ask_answers_with_whole_sentences_of_a_relevant_source(
    loaded: tuple[Knowledge, str],
) -> None:
    knowledge, corpus = loaded
    knowledge.model[0] = None  # no model: the extractive answer
    question = "how did we fix the invoice rounding bug"
    answer = knowledge.ok(corpus, "ask", {"question": question})
    principal = Principal(team="alpha", token_id="t", token_name="t", scopes=frozenset({"admin"}))
    sources = knowledge.service.ask_sources(principal, AskInput(question=question))
    quoted = _quoted(answer)
    assert quoted
    for sentence, number in quoted:
        node, _ = sources[number - 1]
        assert sentence in node_sentences(node), sentence
    first, number = quoted[0]
    assert "rounding" in sources[number - 1][0].embed_text  # the scenario's marker
    assert "rounding" in first.lower()


def test_ask_drops_sources_below_the_relevance_cut_off(loaded: tuple[Knowledge, str]) -> None:
    knowledge, corpus = loaded
    knowledge.model[0] = None  # no model: the extractive answer
    question = "how did we fix the invoice rounding bug"
    ranked = knowledge.ok(corpus, "search_hybrid", {"query": question})
    assert any(r["score"] < ASK_MIN_RELEVANCE for r in ranked)  # the engine keeps weak ones
    answer = knowledge.ok(corpus, "ask", {"question": question})
    shown = _source_scores(answer)
    assert shown
    assert min(shown) >= round(ASK_MIN_RELEVANCE * 100)
    assert len(shown) < len(ranked)


def test_get_context_shows_each_node_and_summary_once(loaded: tuple[Knowledge, str]) -> None:
    knowledge, corpus = loaded
    block = knowledge.ok(corpus, "get_context", {"query": "failing invoice tests", "limit": 10})
    headings = [line for line in block.splitlines() if line.startswith("## [")]
    summaries = [h.split("] ", 1)[1].rsplit(" (score: ", 1)[0] for h in headings]
    assert len(summaries) == len(set(summaries))
    uuids = [u for u in block.split("`") if u.startswith("kn_")]
    assert len(uuids) == len(set(uuids))
    for summary in summaries:
        assert block.count(summary) == 1, summary
    assert "- **Same session again:** " in block  # the corpus repeats its sessions


def test_ask_lists_a_session_repeated_word_for_word_as_one_source(
    loaded: tuple[Knowledge, str],
) -> None:
    knowledge, corpus = loaded
    knowledge.model[0] = None
    answer = knowledge.ok(corpus, "ask", {"question": "how did we fix the invoice rounding bug"})
    sources = answer.split("\n\nSources:\n", 1)[1].splitlines()
    summaries = [line.split("%] ", 1)[1] for line in sources if "%] " in line]
    assert summaries
    assert len(summaries) == len(set(summaries)), sources
    assert any(line.strip().startswith("the same session again: ") for line in sources)


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "lexical", "recent"])
def test_every_ranked_knowledge_tool_lists_scores_best_first(
    loaded: tuple[Knowledge, str], mode: str
) -> None:
    knowledge, corpus = loaded
    knowledge.model[0] = None  # no model: the extractive answer
    for query, _ in QUESTIONS[:12]:
        hybrid = knowledge.ok(corpus, "search_hybrid", {"query": query, "mode": mode})
        scores = [r["score"] for r in hybrid]
        assert scores == sorted(scores, reverse=True), (mode, query, scores)
        if mode == "recent":
            assert len(set(scores)) > 1  # a recency, not 1.0 for everything
            continue
        if mode != "hybrid":
            plain = knowledge.ok(corpus, "search_knowledge", {"query": query, "mode": mode})
            scores = [r["score"] for r in plain]
            assert scores == sorted(scores, reverse=True), (mode, query, scores)
        if mode == "hybrid":
            shown = _source_scores(knowledge.ok(corpus, "ask", {"question": query}))
            assert shown == sorted(shown, reverse=True), (query, shown)
            block = knowledge.ok(corpus, "get_context", {"query": query})
            context = [float(x.split(")", 1)[0]) for x in block.split("(score: ")[1:]]
            assert context == sorted(context, reverse=True), (query, context)
