"""`cairn index`'s progress stream: the NDJSON lines the local server writes while it indexes
(`stream_progress`) and the words of a failure (`failure_detail`), which the command reads
(`shared.local.indexing`)."""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable, Iterator
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
