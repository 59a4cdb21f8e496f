"""The curator's pair judge and the curation bench's scoring, without a model (cosines given)."""

from __future__ import annotations

import pytest

from shared.bench.curation import Pair, fit, load_pairs, scores
from shared.memory.detection import Thresholds, finding_id, judge, same_words, signals


@pytest.mark.parametrize(
    ("a", "b", "signal"),
    [
        ("Deploys are frozen on Fridays.", "Deploys aren't frozen on Fridays.", "negation"),
        ("The timeout is 30 s.", "The timeout is 60 s.", "number"),
        ("The cache is enabled.", "The cache is disabled.", "antonym"),
        ("The primary database is Postgres.", "The primary database is MySQL.", "value"),
    ],
)
def test_each_kind_of_difference_is_a_signal(a: str, b: str, signal: str) -> None:
    assert signal in signals(a, b)


def test_a_difference_needs_the_same_topic_or_enough_similarity_to_be_a_conflict() -> None:
    a, b = "Deploys are frozen on Fridays.", "Deploys are not frozen on Fridays."
    assert judge(a, b, 0.9, same_topic=False).kind == "conflict"
    assert judge(a, b, 0.3, same_topic=True).kind == "conflict"
    assert judge(a, b, 0.3, same_topic=False).kind is None


def test_identical_or_near_identical_bodies_are_duplicates() -> None:
    assert judge("Lunch at noon.", "  lunch AT noon. ", 0.2, False).kind == "duplicate"
    assert judge("We deploy on Tuesdays.", "Deploys happen on Tuesdays.", 0.95, False).kind == (
        "duplicate"
    )
    assert judge("We deploy on Tuesdays.", "Lunch is at noon.", 0.2, False).kind is None


def test_a_finding_id_depends_on_its_members_only() -> None:
    assert finding_id("conflict", ["b", "a"]) == finding_id("conflict", ["a", "b"])
    assert finding_id("conflict", ["a", "b"]) != finding_id("duplicate", ["a", "b"])


def test_the_bench_counts_precision_and_recall_per_kind() -> None:
    pairs = [
        Pair("The cache is on.", "The cache is off.", "conflict", "train", True),
        Pair("Lunch at noon.", "Lunch at noon.", "duplicate", "train", False),
        Pair("Lunch at noon.", "The VPN needs 2FA.", "unrelated", "train", False),
        Pair("The sky is blue.", "Grass is green.", "conflict", "train", False),
    ]
    result = scores(pairs, [0.8, 1.0, 0.1, 0.2], Thresholds())
    assert result["conflict"] == {
        "precision": 1.0,
        "recall": 0.5,
        "f1": 0.667,
        "tp": 1,
        "fp": 0,
        "fn": 1,
        "labelled": 2,
    }
    assert result["duplicate"]["precision"] == result["duplicate"]["recall"] == 1.0


def test_the_labelled_set_has_a_held_out_part_of_every_kind() -> None:
    pairs = load_pairs()
    assert len(pairs) >= 100
    for label in ("conflict", "duplicate", "unrelated"):
        parts = {p.split for p in pairs if p.label == label}
        assert parts == {"train", "test"}
    assert not {(p.a, p.b) for p in pairs if p.split == "train"} & {
        (p.a, p.b) for p in pairs if p.split == "test"
    }


def test_fitting_uses_only_the_pairs_it_is_given() -> None:
    pairs = [Pair("A is on.", "A is off.", "conflict", "train", False)]
    fitted, mean_f1 = fit(pairs, [0.7])
    assert fitted.conflict <= 0.7
    assert mean_f1 == 0.5  # conflict F1 1.0, no duplicate labelled (F1 0)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("restart-check", "Restart check"),
        (
            "Use the restartcheck script after a rollback.",
            "Use the restart_check script after a rollback.",
        ),
        ("The deploy window is 09:00-17:00 UTC.", "The Deploy-Window is 09:00 - 17:00 utc"),
        ("Log level in production is WARN.", "log-level in production is warn."),
    ],
)
def test_texts_differing_only_in_case_punctuation_or_separators_are_duplicates(
    a: str, b: str
) -> None:
    # Whatever the cosine and even about the same topic: never a conflict.
    for cosine in (0.3, 0.8, 0.99):
        assert judge(a, b, cosine, same_topic=True).kind == "duplicate"
    assert same_words(a, b)


def test_a_changed_word_or_number_is_not_a_spelling_variant() -> None:
    assert not same_words("The cache TTL is 300 seconds.", "The cache TTL is 30 seconds.")
    assert not same_words("Deploys are frozen on Fridays.", "Deploys are not frozen on Fridays.")
    assert judge("Cache TTL is 300 s.", "Cache-TTL is 30 s.", 0.95, True).kind == "conflict"


def test_the_held_out_pairs_include_spelling_variants() -> None:
    variants = [p for p in load_pairs() if p.variant == "spelling"]
    assert len(variants) >= 10
    assert {p.split for p in variants} == {"test"}
    assert {p.label for p in variants} == {"duplicate"}
