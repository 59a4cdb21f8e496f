"""Field shapes the tool inputs of several groups share, so each is declared once."""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field

# The most a free-form `metadata` object may take, as JSON (an agent's or an artifact's).
MAX_METADATA_BYTES = 8_192


def optional_text(max_length: int | None, description: str) -> Any:
    """An optional text argument: absent (None), or 1 to `max_length` characters (None: no
    upper bound).

    >>> class ListInput(BaseModel):  # doctest: +SKIP
    ...     cwd: str | None = optional_text(1_024, "Only handoffs created in this folder.")
    """
    return Field(default=None, min_length=1, max_length=max_length, description=description)


def checked_metadata(value: dict[str, Any]) -> dict[str, Any]:
    """`value` if it takes at most MAX_METADATA_BYTES as JSON; a field validator's ValueError
    naming the size otherwise."""
    size = len(json.dumps(value, ensure_ascii=False).encode())
    if size > MAX_METADATA_BYTES:
        raise ValueError(f"must be at most {MAX_METADATA_BYTES} bytes as JSON (got {size})")
    return value
