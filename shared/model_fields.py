"""Field shapes the tool inputs of several groups share, so each is declared once."""

from __future__ import annotations

from typing import Any

from pydantic import Field


def optional_text(max_length: int | None, description: str) -> Any:
    """An optional text argument: absent (None), or 1 to `max_length` characters (None: no
    upper bound).

    >>> class ListInput(BaseModel):  # doctest: +SKIP
    ...     cwd: str | None = optional_text(1_024, "Only handoffs created in this folder.")
    """
    return Field(default=None, min_length=1, max_length=max_length, description=description)
