"""What every seed 000 tool input shares, and helpers for fields left out of the JSON."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class SeedToolInput(BaseModel):
    """Base of seed 000 tool inputs.

    Seed 000 lists a `token` argument for clients that cannot send headers. The gateway reads it
    as the caller's token when no Authorization header is sent, and takes it out of the
    arguments before dispatch: a tool never receives it (the field stays so that `tools/list`
    shows the seed's schema). Any other unknown argument is refused, so a typo never passes
    silently.
    """

    model_config = ConfigDict(extra="forbid")

    # No description: it was the same sentence in 47 listed tools (3.6 KB of every `tools/list`
    # at /mcp/all); seed 000 itself lists `token` bare on some tools, and docs/protocol.md says
    # how it authenticates.
    token: str | None = None


def is_none(value: object) -> bool:
    """`Field(exclude_if=is_none)`: a field the JSON leaves out while unset."""
    return value is None


def is_empty(value: object) -> bool:
    """`Field(exclude_if=is_empty)`: a collection the JSON leaves out while empty."""
    return not value
