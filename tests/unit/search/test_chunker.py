"""The markdown-aware chunker: structure first, sizes bounded, offsets exact, overlap kept."""

from __future__ import annotations

import itertools

from shared.search.chunker import ChunkerConfig, chunk_text

SENTENCE = "The quick brown fox jumps over the lazy dog near the riverbank. "


def test_every_chunk_is_exactly_its_slice_of_the_original() -> None:
    text = "# Intro\n\nHello.\n\n## Body\n\n" + SENTENCE * 80 + "\n\n## End\n\nBye."
    for chunk in chunk_text(text):
        assert text[chunk.char_offset_start : chunk.char_offset_end] == chunk.text


def test_chunks_never_exceed_the_maximum_size() -> None:
    config = ChunkerConfig(target=300, maximum=400, overlap=50)
    text = (SENTENCE * 30 + "\n\n") * 4 + "x" * 1500  # one unbroken 1,500-char word too
    chunks = chunk_text(text, config)
    assert chunks
    assert all(len(c.text) <= config.maximum for c in chunks)


def test_large_sections_split_at_headings_and_carry_their_heading() -> None:
    config = ChunkerConfig(target=300, maximum=400, overlap=50)
    text = "# Alpha\n" + SENTENCE * 6 + "\n\n# Beta\n" + SENTENCE * 6
    chunks = chunk_text(text, config)
    headings = {c.heading for c in chunks}
    assert headings == {"Alpha", "Beta"}
    assert not any("# Alpha" in c.text and "# Beta" in c.text for c in chunks)


def test_small_neighbouring_sections_merge_into_one_section_chunk() -> None:
    chunks = chunk_text("# One\nfirst\n\n# Two\nsecond")
    assert len(chunks) == 1
    assert chunks[0].chunk_type == "section"


def test_a_hash_line_inside_fenced_code_is_not_a_heading() -> None:
    config = ChunkerConfig(target=60, maximum=80, overlap=0)
    text = "# Real\nintro text here\n\n```\n# comment in code\nprint(1)\n```\n"
    chunks = chunk_text(text, config)
    assert all(c.heading == "Real" for c in chunks)


def test_consecutive_chunks_of_a_long_section_overlap() -> None:
    config = ChunkerConfig(target=400, maximum=500, overlap=150)
    chunks = chunk_text(SENTENCE * 40, config)
    assert len(chunks) > 2
    for before, after in itertools.pairwise(chunks):
        assert after.char_offset_start < before.char_offset_end
        assert after.char_offset_start > before.char_offset_start
        assert after.chunk_type == "semantic"


def test_indexes_count_from_zero_in_document_order() -> None:
    chunks = chunk_text(SENTENCE * 60)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert [c.char_offset_start for c in chunks] == sorted(c.char_offset_start for c in chunks)


def test_blank_text_has_no_chunks() -> None:
    assert chunk_text("") == []
    assert chunk_text("  \n\n \t ") == []
