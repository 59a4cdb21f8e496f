"""One page of a store's listing, and the opaque cursor that continues it.

A cursor is base64url JSON of the adapter's position (the last key it returned). It names the
team it was issued for, so a cursor replayed under another team's token is refused instead of
leaking that team's position (the adapters only ever read inside the caller's team anyway).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    """`items` in the listing's order; `next_cursor` is None on the last page."""

    items: list[T] = field(default_factory=list)
    next_cursor: str | None = None


class BadCursor(ValueError):
    """A cursor that this store did not issue for this team."""


def encode_cursor(team: str, position: dict[str, Any]) -> str:
    raw = json.dumps({"t": team, "p": position}, separators=(",", ":"), sort_keys=True)
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(team: str, cursor: str) -> dict[str, Any]:
    """The position inside `cursor`; `BadCursor` when it is malformed or another team's."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        decoded = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (binascii.Error, ValueError, UnicodeError) as exc:
        raise BadCursor("the cursor is malformed") from exc
    if not isinstance(decoded, dict) or not isinstance(decoded.get("p"), dict):
        raise BadCursor("the cursor is malformed")
    if decoded.get("t") != team:
        raise BadCursor("the cursor was issued for another team")
    position: dict[str, Any] = decoded["p"]
    return position
