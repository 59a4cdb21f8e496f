"""Query text analysis shared by the adapters: terms and the stopwords BM25 skips."""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
MAX_QUERY_TERMS = 64

# Lucene's English stop set (the `english` analyzer OpenSearch uses), so both adapters
# drop the same words: they match nearly every chunk, add no ranking signal and cost time.
STOPWORDS = frozenset(
    {
        *("a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into"),
        *("is", "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then"),
        *("there", "these", "they", "this", "to", "was", "will", "with"),
    }
)


def query_terms(text: str) -> list[str]:
    """Distinct lower-cased words of `text`, stopwords removed, in order of appearance.

    >>> query_terms("The cat and the Hat's hat")
    ['cat', 'hat', 's']
    """
    terms = [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]
    return list(dict.fromkeys(terms))[:MAX_QUERY_TERMS]
