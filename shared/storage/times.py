"""Timestamps as the embedded database sorts them."""

from __future__ import annotations

from datetime import UTC, datetime


def sortable(moment: datetime) -> str:
    """UTC with microseconds always present, so text order is time order.

    (ISO strings of mixed precision do not sort: "…:00Z" > "…:00.5Z".)
    """
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
