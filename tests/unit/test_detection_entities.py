"""Two facts about two different things are not a conflict (issue 11): the entity rules of
`shared.memory.detection`, without a model (cosines given, as alike as MiniLM makes them)."""

from __future__ import annotations

import pytest

from shared.bench.curation import Pair, load_pairs, scores
from shared.memory.detection import (
    Thresholds,
    Verdict,
    distinct_entities,
    distinct_subjects,
    judge,
    subject_gate,
)

ALIKE = 0.97  # template-filled sentences: MiniLM puts them this close


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Service 1 owns port 8001.", "Service 2 owns port 8002."),
        (
            "The quokka0329830762 service runs on ARM.",
            "The quokka7741920385 service runs on ARM.",
        ),
        ("Port 8001 belongs to service 1.", "Port 8002 belongs to service 2."),
        ("Worker 7 is disabled.", "Worker 8 is enabled."),
        ("Service A runs on ARM.", "Service B runs on x86."),
    ],
)
def test_an_identifier_swapped_in_subject_position_is_two_things_not_a_conflict(
    a: str, b: str
) -> None:
    assert distinct_entities(a, b)
    verdict = judge(a, b, ALIKE, same_topic=True)
    assert verdict.kind is None  # the old rule: conflict (number/antonym), or duplicate
    assert "distinct_entities" in verdict.signals


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Service 1 owns port 8001.", "Service 1 owns port 8002."),
        ("Port 8001 belongs to service 1.", "Port 8001 belongs to service 2."),
        ("The staging database runs Postgres 14.", "The staging database runs Postgres 16."),
        ("The deploy window is two weeks.", "The deploy window is three weeks."),
        ("Worker 7 is disabled.", "Worker 7 is enabled."),
        # A name that is not an identifier is not taken for another thing: one owner, two values.
        ("Bob owns the billing service.", "Carol owns the billing service."),
        # An identifier after the predicate is a value of the subject.
        ("The build uses image abc123.", "The build uses image def456."),
    ],
)
def test_one_thing_with_two_values_is_still_a_conflict(a: str, b: str) -> None:
    assert not distinct_entities(a, b)
    assert judge(a, b, 0.8, same_topic=True).kind == "conflict"


def test_explicit_subjects_that_differ_make_a_conflict_two_facts() -> None:
    conflict = judge("Prefers dark mode.", "Prefers light mode.", 0.9, same_topic=False)
    assert conflict.kind == "conflict"
    assert subject_gate(conflict, "alice", "bob").kind is None
    assert subject_gate(conflict, "Alice", "alice").kind == "conflict"
    # Without two explicit subjects nothing is known: a title or key is only a label.
    assert subject_gate(conflict, "alice", None).kind == "conflict"
    assert not distinct_subjects("Deploy-window", "deploy window")
    duplicate = Verdict("duplicate", ())
    assert subject_gate(duplicate, "alice", "bob") == duplicate


def test_the_bench_reads_explicit_subjects_and_grades_through_the_gate() -> None:
    pair = Pair("Prefers dark mode.", "Prefers light mode.", "unrelated", "train", False)
    gated = Pair(pair.a, pair.b, pair.label, pair.split, False, ("alice", "bob"))
    assert scores([pair], [0.9], Thresholds())["conflict"]["fp"] == 1
    assert scores([gated], [0.9], Thresholds())["conflict"]["fp"] == 0
    labelled = load_pairs()
    distinct = [p for p in labelled if p.subjects and p.subjects[0] != p.subjects[1]]
    assert {p.split for p in distinct} == {"train", "test"}
