"""The knowledge fixture corpus (generated, fixed clock): shared with `cairn bench knowledge`."""

from shared.bench.knowledge_corpus import (
    DAY,
    HOUR,
    NOW_MS,
    PROJECTS,
    QUESTIONS,
    generate,
)

__all__ = ["DAY", "HOUR", "NOW_MS", "PROJECTS", "QUESTIONS", "generate"]
