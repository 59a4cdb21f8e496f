"""Markdown-aware chunking with overlap and exact character offsets.

A document is split on headings first (fenced code is never split on a `#` line), small
neighbouring sections are merged, and a section too large for one chunk is packed from its
paragraphs, then sentences, then (last resort) whitespace-split pieces, with a short overlap
between consecutive chunks. Every chunk's text is exactly `text[char_offset_start:char_offset_end]`
of the original, so offsets always point at what was indexed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shared.search.models import Chunk

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^(```|~~~)")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
# A sentence ends at . ! or ? followed by whitespace; abbreviations occasionally split early,
# which only costs a slightly earlier chunk boundary.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")


@dataclass(frozen=True)
class ChunkerConfig:
    """Sizes in characters: chunks aim for `target`, never exceed `maximum`.

    1,500 / 2,000 measured best on SciFact train among the sizes tried (1,000 / 1,300 and
    1,200 / 1,600 scored lower for BM25, vectors and hybrid alike; docs/search.md).
    """

    target: int = 1500
    maximum: int = 2000
    overlap: int = 200


@dataclass(frozen=True)
class _Span:
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def chunk_text(text: str, config: ChunkerConfig | None = None) -> list[Chunk]:
    """Split `text` into chunks (see module docstring); empty or blank text gives no chunks.

    >>> [c.chunk_type for c in chunk_text("# A\\nshort\\n\\n# B\\nalso short")]
    ['section']
    """
    config = config or ChunkerConfig()
    sections = _sections(text)
    chunks: list[Chunk] = []
    pending: list[tuple[_Span, str | None]] = []  # whole sections waiting to be merged

    def flush() -> None:
        if pending:
            span = _Span(pending[0][0].start, pending[-1][0].end)
            chunks.append(_make(text, span, len(chunks), "section", pending[0][1]))
            pending.clear()

    for span, heading in sections:
        if span.size <= config.target:
            merged = span.end - pending[0][0].start if pending else span.size
            if pending and merged > config.target:
                flush()
            pending.append((span, heading))
            continue
        flush()
        for piece in _pack(text, span, config):
            chunks.append(_make(text, piece, len(chunks), "semantic", heading))
    flush()
    return chunks


def _make(text: str, span: _Span, index: int, chunk_type: str, heading: str | None) -> Chunk:
    return Chunk(
        index=index,
        text=text[span.start : span.end],
        char_offset_start=span.start,
        char_offset_end=span.end,
        chunk_type=chunk_type,
        heading=heading,
    )


def _trim(text: str, start: int, end: int) -> _Span | None:
    """The span without surrounding whitespace, or None when it is blank."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return _Span(start, end) if end > start else None


def _sections(text: str) -> list[tuple[_Span, str | None]]:
    """Spans starting at each heading line (or the document start); fenced `#` lines ignored."""
    starts: list[tuple[int, str | None]] = [(0, None)]
    in_fence = False
    position = 0
    for line in text.splitlines(keepends=True):
        stripped = line.rstrip("\r\n")
        if _FENCE.match(stripped.lstrip()):
            in_fence = not in_fence
        elif not in_fence and (match := _HEADING.match(stripped)):
            starts.append((position, match.group(2).strip()))
        position += len(line)
    sections: list[tuple[_Span, str | None]] = []
    for i, (start, heading) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        span = _trim(text, start, end)
        if span is not None:
            sections.append((span, heading))
    return sections


def _units(text: str, span: _Span, maximum: int) -> list[_Span]:
    """Pieces of `span`, each at most `maximum` long: paragraphs, else sentences, else words."""
    units: list[_Span] = []
    for paragraph in _split(text, span, _PARAGRAPH_BREAK):
        if paragraph.size <= maximum:
            units.append(paragraph)
            continue
        for sentence in _split(text, paragraph, _SENTENCE_END):
            if sentence.size <= maximum:
                units.append(sentence)
            else:
                units.extend(_hard_split(text, sentence, maximum))
    return units


def _split(text: str, span: _Span, separator: re.Pattern[str]) -> list[_Span]:
    pieces: list[_Span] = []
    start = span.start
    for match in separator.finditer(text, span.start, span.end):
        if (piece := _trim(text, start, match.start())) is not None:
            pieces.append(piece)
        start = match.end()
    if (piece := _trim(text, start, span.end)) is not None:
        pieces.append(piece)
    return pieces


def _hard_split(text: str, span: _Span, maximum: int) -> list[_Span]:
    pieces: list[_Span] = []
    start = span.start
    while span.end - start > maximum:
        cut = text.rfind(" ", start + maximum // 2, start + maximum)
        cut = cut if cut > start else start + maximum
        if (piece := _trim(text, start, cut)) is not None:
            pieces.append(piece)
        start = cut
    if (piece := _trim(text, start, span.end)) is not None:
        pieces.append(piece)
    return pieces


def _pack(text: str, span: _Span, config: ChunkerConfig) -> list[_Span]:
    """Greedily pack units up to `target` (or `maximum` while a chunk is under half target)."""
    units = _units(text, span, config.maximum)
    chunks: list[_Span] = []
    first = 0
    while first < len(units):
        last = first
        while last + 1 < len(units):
            size = units[last + 1].end - units[first].start
            current = units[last].end - units[first].start
            if size <= config.target or (current < config.target // 2 and size <= config.maximum):
                last += 1
            else:
                break
        chunks.append(_Span(units[first].start, units[last].end))
        if last + 1 >= len(units):
            break
        # Overlap: start the next chunk with the trailing units of this one that fit the budget,
        # always advancing by at least one unit.
        following = last + 1
        while (
            following - 1 > first and units[last].end - units[following - 1].start <= config.overlap
        ):
            following -= 1
        first = following
    return chunks
