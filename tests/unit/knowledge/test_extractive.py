"""`ask` without a model quotes whole sentences of its sources, never tag lists or fragments."""

from __future__ import annotations

from shared.knowledge.enrich import build_node
from shared.knowledge.extractive import (
    EXTRACTIVE_NOTE,
    extractive_answer,
    is_whole_sentence,
    node_sentences,
)
from shared.knowledge.models import Event, KnowledgeNode

NOW = 1_800_000_000_000


def _event(number: int, **fields: object) -> Event:
    return Event.model_validate(
        {"id": f"e{number}", "timestamp": NOW + number, "ingested_at": NOW, **fields}
    )


def _agent_node() -> KnowledgeNode:
    text = (
        "## Summary\n**Fixed** the invoice rounding bug: totals now use Decimal with banker's "
        "rounding. Added a regression test for totals that end in half a cent. <b>Done</b>"
    )
    event = _event(
        1,
        source="claude",
        summary_text=text,
        cwd="/home/dev/src/billing",
        git_branch="main",
        tool_calls=["Read", "Edit", "Bash"],
        harness="claude-code",
        session_id="s1",
    )
    return build_node("kn_agent", "k1", [event])


def _shell_node() -> KnowledgeNode:
    commands = [("pytest tests/test_invoices.py -q", 1), ("vim src/billing/invoices.py", 0)]
    events = [
        _event(10 + i, source="shell", command=c, exit_code=code, cwd="/home/dev/src/billing")
        for i, (c, code) in enumerate(commands)
    ]
    return build_node("kn_shell", "k2", events)


def test_tag_lists_and_fragments_are_not_sentences() -> None:
    assert is_whole_sentence("Totals now use Decimal with banker's rounding.")
    assert not is_whole_sentence("testing pytest tests/test_invoices.py -q (exit 1) vim a.py")
    assert not is_whole_sentence("Read Edit Bash billing acme/billing main.")
    assert not is_whole_sentence("1 failed (last: pytest, exit 1) testing pytest")
    assert not is_whole_sentence("rounding bug")


def test_a_node_is_quoted_by_its_whole_summary_and_its_events_sentences_only() -> None:
    node = _agent_node()
    sentences = node_sentences(node)
    assert "Added a regression test for totals that end in half a cent." in sentences
    # Markup is stripped; the names and tools glued after the text are no sentence.
    assert all("**" not in s and "<b>" not in s and "##" not in s for s in sentences)
    assert all(is_whole_sentence(s) or s.startswith("claude-code session") for s in sentences)
    assert not any("Read Edit Bash" in s for s in sentences)


def test_the_answer_is_whole_sentences_of_the_sources_and_says_it_is_extractive() -> None:
    agent, shell = _agent_node(), _shell_node()
    answer = extractive_answer(
        "how did we fix the invoice rounding bug", [(agent, 0.9), (shell, 0.5)]
    )
    note, *lines = answer.splitlines()
    assert note == EXTRACTIVE_NOTE
    assert "Extractive answer" in note
    assert lines
    sources = {1: agent, 2: shell}
    for line in lines:
        assert line.startswith("- ")
        sentence, _, cite = line[2:].rpartition(" [")
        assert sentence in node_sentences(sources[int(cite.rstrip("]"))])
        assert sentence.endswith((".", "!", "?"))
    # The first sentence comes from the best source, and is about the question.
    first = lines[0][2:]
    assert first.endswith("[1]")
    assert "rounding" in first


def test_no_sentence_is_quoted_twice_even_from_identical_nodes() -> None:
    one, again = _shell_node(), _shell_node().model_copy(update={"uuid": "kn_again"})
    answer = extractive_answer("failing invoice tests", [(one, 0.9), (again, 0.9)])
    quoted = [line for line in answer.splitlines() if line.startswith("- ")]
    assert len(quoted) == len({q.rsplit(" [", 1)[0] for q in quoted}) == 1
