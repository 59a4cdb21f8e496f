"""Seed 002's handoff document rule: exactly the five sections, each once."""

from __future__ import annotations

import pytest

from shared.handoffs.sections import REQUIRED_SECTIONS, headings, section_problem

VALID = """# Handoff: billing export

## Start & intent
Export invoices as CSV for finance.

## Journey
Tried the ORM first; too slow.

### Dead ends
Streaming cursors time out.

## Current state
Exporter works for one month.

## What’s left
Loop over months; upload to S3.

## Open questions
Which timezone does finance want?
"""


def test_a_document_with_the_five_sections_passes() -> None:
    assert section_problem(VALID) is None


def test_headings_inside_fenced_code_are_not_sections() -> None:
    document = VALID.replace("Streaming cursors time out.", "```\n## Journey\n# not a heading\n```")
    assert section_problem(document) is None
    assert "not a heading" not in [h.title for h in headings(document)]


def test_spelling_variants_of_the_headings_are_accepted() -> None:
    document = (
        "# start and intent:\nx\n# JOURNEY\nx\n# Current State\nx\n# What's left\nx\n"
        "# Open questions:\nx\n"
    )
    assert section_problem(document) is None


def test_a_missing_section_is_named() -> None:
    document = VALID.replace("## Open questions\nWhich timezone does finance want?\n", "")
    assert section_problem(document) == "is missing section(s): Open questions"


def test_a_document_without_any_section_names_all_five() -> None:
    problem = section_problem("just some notes")
    assert problem == "is missing section(s): " + ", ".join(REQUIRED_SECTIONS)


def test_a_repeated_section_is_refused() -> None:
    document = VALID + "\n## Journey\nMore journey.\n"
    assert section_problem(document) == "repeats section(s): Journey"


def test_an_extra_section_at_the_same_level_is_refused() -> None:
    document = VALID + "\n## Notes\nextra\n"
    assert section_problem(document) == (
        "must hold exactly the five required sections; remove or demote: Notes"
    )


def test_a_required_heading_at_another_level_counts_as_extra() -> None:
    document = VALID.replace("## Current state", "### Current state")
    problem = section_problem(document)
    assert problem is not None
    assert "Current state" in problem


@pytest.mark.parametrize("title", ["# Handoff", "# Billing export handoff"])
def test_a_title_above_the_sections_is_allowed(title: str) -> None:
    assert section_problem(VALID.replace("# Handoff: billing export", title)) is None
