"""The progress stream of a long admin command (`cairn index`, `cairn import`): the NDJSON
lines the local server writes while it works (`stream_progress`), the words of a failure
(`failure_detail`), and the command's side that reads them (`read_progress`)."""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the connector is imported when the server first indexes, not at start
    from shared.connectors.local_files import ProgressCallback


def failure_detail(exc: Exception) -> str:
    """The words of an indexing failure (the runtime raises HTTPException with a detail)."""
    detail = getattr(exc, "detail", None)
    return str(detail) if detail else f"{type(exc).__name__}: {exc}"


def stream_progress(run: Callable[[ProgressCallback], dict[str, int]]) -> Iterator[bytes]:
    """Run `run(report)` in a worker thread; yield its progress, then its stats, as NDJSON.

    Lines: `{"stage", "done", "total"}` while it works, then `{"stats": {...}}` or
    `{"error": "..."}` — the HTTP status is already sent when indexing starts.
    """
    events: queue.Queue[dict[str, Any] | None] = queue.Queue()

    def work() -> None:
        try:
            stats = run(lambda p: events.put({"stage": p.stage, "done": p.done, "total": p.total}))
            events.put({"stats": stats})
        except Exception as exc:  # reported to the CLI as a line, never a cut stream
            events.put({"error": failure_detail(exc)})
        finally:
            events.put(None)

    threading.Thread(target=work, name="cairn-index", daemon=True).start()
    while (event := events.get()) is not None:
        yield (json.dumps(event) + "\n").encode()


class ProgressFailed(Exception):
    """The stream's `{"error": ...}` line: the work failed on the server (the message says how)."""


def read_progress(lines: Iterable[bytes], report: ProgressCallback) -> dict[str, Any] | None:
    """The reading side of `stream_progress`: each progress line to `report`, then the stats;
    `ProgressFailed` on an error line; None when the stream ends before either."""
    from shared.connectors.local_files import Progress

    for raw in lines:
        event = json.loads(raw)
        if "stats" in event:
            stats: dict[str, Any] = event["stats"]
            return stats
        if "error" in event:
            raise ProgressFailed(event["error"])
        report(Progress(event["stage"], event["done"], event["total"]))
    return None
