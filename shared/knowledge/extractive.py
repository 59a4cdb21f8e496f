"""`ask` without a model: whole sentences quoted from the best sources, and nothing else.

A node's `embed_text` is its summary, its intent, each event's text and then the names of what
it touched, joined with spaces: split on punctuation it yields tag lists and half-commands glued
into "sentences". So the candidates here are the node's summary when it is whole (not cut with
`…`), and the sentences of the rest that read as sentences: they start with a capital, a digit
or a quote, end with `.`, `!` or `?`, hold at least four words, and most of their words are
words (a code span counts as one); markup (bullets, headings, emphasis, HTML tags) is stripped.
Each kept sentence is scored by its source's relevance plus half the share of the question's
words it holds, so the first sentence comes from the best source that says something about
the question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from shared.knowledge.models import KnowledgeNode
from shared.search.fusion import coverage, query_stems

EXTRACTIVE_NOTE = (
    "(Extractive answer: no model is configured, so these are whole sentences quoted from the "
    "most relevant sources.)"
)
MAX_SENTENCES = 3
# A longer "sentence" is a run-on paste (a log, a diff); it is not quoted, and not cut either.
MAX_SENTENCE_CHARS = 400
MIN_WORDS = 4
# Below this share of plain words a "sentence" is a list of names, paths or flags.
MIN_WORD_SHARE = 0.6

# A sentence ends at . ! or ? followed by a space (so "v1.2" and "src/app.py" do not end one)
# or at a line break; "e.g." and the like are joined back (`_ABBREVIATION`). What follows may
# be lower-case: an event's text is followed by the names it touched, not a new sentence.
_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]?\s+|\n+")
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf|approx|incl|no)\.)$", re.IGNORECASE)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_HTML_TAG = re.compile(r"</?[a-zA-Z][^<>]*>")
_EMPHASIS = re.compile(r"(\*\*|__|~~)")
# A heading mark, bullet or quote mark where a line began (embed texts have no line breaks left).
_INNER_MARKUP = re.compile(r"(?<=\s)(?:#{1,6}|[-*+>])\s+")
_PLAIN_WORD = re.compile(r"^[(\"']?([A-Za-z][a-z'’-]*|\d+|CODE)[,.;:!?)\"']*$")
_FUNCTION_WORDS = frozenset(
    {
        "a", "an", "the", "to", "of", "in", "on", "for", "with", "and", "or", "but", "is", "was",
        "are", "were", "be", "been", "it", "this", "that", "these", "so", "as", "at", "by",
        "from", "into", "now", "not", "no", "after", "before", "under", "over", "instead",
        "when", "then", "than", "which", "who", "we", "i", "you", "they", "has", "have", "had",
    }
)  # fmt: skip
_OPENING = re.compile(r"^[A-Z0-9\"'`(]")
_ENDING = re.compile(r"[.!?][\"')\]]?$")


@dataclass(frozen=True)
class Quote:
    """A sentence of source `number` (1-based, as the Sources block numbers them)."""

    text: str
    number: int
    score: float


def clean(text: str) -> str:
    """`text` without markup (HTML tags, emphasis, headings, bullets, numbered items) and with
    its spacing collapsed."""
    text = _HTML_TAG.sub(" ", text)
    text = _EMPHASIS.sub("", text)
    text = _INNER_MARKUP.sub(" ", f" {text}")
    return " ".join(text.split())


def is_whole_sentence(sentence: str) -> bool:
    """Whether `sentence` reads as a sentence, not a fragment or a tag list.

    >>> is_whole_sentence("Fixed the invoice rounding bug with Decimal.")
    True
    >>> is_whole_sentence("testing pytest tests/test_invoices.py -q (exit 1) vim src/app.py")
    False
    >>> is_whole_sentence("Read Edit Bash billing acme/billing main.")
    False
    """
    if not _OPENING.match(sentence) or not _ENDING.search(sentence):
        return False
    words = _CODE_SPAN.sub("CODE", sentence).split()
    if len(words) < MIN_WORDS:
        return False
    plain = sum(1 for w in words if _PLAIN_WORD.match(w))
    if plain / len(words) < MIN_WORD_SHARE:
        return False
    # A list of names has no grammar: a sentence joins its words with at least one of these.
    return any(w.strip("(),.;:!?\"'").lower() in _FUNCTION_WORDS for w in words)


def split_sentences(text: str) -> list[str]:
    """`text` without markup, cut into sentences, whole or not."""
    pieces: list[str] = []
    for part in _BOUNDARY.split(clean(text)):
        part = part.strip()
        if not part:
            continue
        if pieces and _ABBREVIATION.search(pieces[-1]):
            pieces[-1] = f"{pieces[-1]} {part}"
        else:
            pieces.append(part)
    return pieces


def node_sentences(node: KnowledgeNode) -> list[str]:
    """The whole sentences a node can be quoted by: its summary when it is whole and one
    statement (a shell or browser summary has no grammar to test, but says what happened),
    else the summary's whole sentences; then those of its events' texts (the embed text after
    the summary and the intent)."""
    found: list[str] = []
    if not node.summary.rstrip().endswith("…"):
        pieces = split_sentences(node.summary)
        if len(pieces) == 1:
            found.append(pieces[0] if _ENDING.search(pieces[0]) else pieces[0] + ".")
        else:
            found += [s for s in pieces if is_whole_sentence(s)]
    rest = node.embed_text
    if rest.startswith(node.summary):
        rest = rest[len(node.summary) :].lstrip()
    if node.intent and rest.startswith(node.intent + " "):
        rest = rest[len(node.intent) + 1 :]
    own = [s for s in split_sentences(rest) if is_whole_sentence(s)]
    # A summary that quotes an event's sentence behind a prefix ("claude-code session in
    # billing (main): Fixed …") gives way to the event's own sentence.
    found = [s for s in found if not any(o.rstrip(".") in s for o in own)]
    return list(dict.fromkeys(found + own))


def quotes(question: str, sources: Sequence[tuple[KnowledgeNode, float]]) -> list[Quote]:
    """The best sentences for `question`, best first, each said once (a sentence quoted whole
    or inside a longer one already chosen adds nothing)."""
    stems = query_stems(question)
    candidates: list[tuple[float, int, str]] = []
    for number, (node, relevance) in enumerate(sources, start=1):
        for sentence in node_sentences(node):
            if len(sentence) > MAX_SENTENCE_CHARS:
                continue
            candidates.append((relevance + 0.5 * coverage(stems, sentence), number, sentence))
    candidates.sort(key=lambda c: (-c[0], c[1]))
    chosen: list[Quote] = []
    for score, number, sentence in candidates:
        folded = sentence.casefold()
        if any(folded in q.text.casefold() or q.text.casefold() in folded for q in chosen):
            continue
        chosen.append(Quote(sentence, number, round(score, 4)))
        if len(chosen) == MAX_SENTENCES:
            break
    return chosen


def extractive_answer(question: str, sources: Sequence[tuple[KnowledgeNode, float]]) -> str:
    """The note saying the answer is extractive, then one quoted sentence a line, cited."""
    chosen = quotes(question, sources)
    if not chosen:
        return EXTRACTIVE_NOTE + "\nNo source holds a whole sentence about this; see the sources."
    return EXTRACTIVE_NOTE + "\n" + "\n".join(f"- {q.text} [{q.number}]" for q in chosen)
