"""What a connector kind is: something that lists a source's items and reads one."""

from __future__ import annotations

from typing import Protocol

from shared.connectors.models import Fetched, Listing, SourceItem


class Source(Protocol):
    """One registered connector, opened for a sync."""

    def list(self, cursor: str | None) -> Listing | None:
        """Every item the source holds now (its id, version and size). None when nothing can
        have changed since `cursor` (the last synced state; a git commit, ...): then the sync
        does nothing."""
        ...

    def read(self, item: SourceItem, known: str | None) -> Fetched:
        """The item's content; `data` None when it is unchanged since the version `known`
        (a web page's 304)."""
        ...
