"""`EnrichmentQueue` adapters: inline (tests), a background thread (local), SQS FIFO (AWS), and
the unconfigured one (DynamoDB storage without a queue)."""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any, Final

logger = logging.getLogger("cairn.knowledge")
Enrich = Callable[[str, Sequence[str]], object]


class InlineQueue:
    """Enriches right away, in the caller's thread: deterministic for tests."""

    def __init__(self, enrich: Enrich) -> None:
        self._enrich = enrich

    def submit(self, team: str, event_ids: Sequence[str]) -> None:
        self._enrich(team, list(event_ids))


# How long a stop waits for the slice in progress: the server's whole stop must fit in 10 s.
STOP_SECONDS: Final = 5.0
SLICE_EVENTS: Final = 100


def _abandon(jobs: queue.Queue[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
    """Take every job still queued off `jobs`, unrun (each marked done for `join`)."""
    taken = []
    while True:
        try:
            taken.append(jobs.get_nowait())
        except queue.Empty:
            return taken
        jobs.task_done()


class BackgroundQueue:
    """`make serve`'s enrichment worker: one daemon thread, so ingest answers at once and one
    team's enrichment never runs twice at the same time. `drain` waits for the backlog; `stop`
    lets the slice in progress finish, abandons the rest (a stop is bounded, not as long as the
    backlog: 2,000 queued events took 23 s to enrich), then ends the thread (before the stores
    close)."""

    _STOP: Final[tuple[str, list[str]]] = ("", [])

    def __init__(self, enrich: Enrich) -> None:
        self._enrich = enrich
        self._jobs: queue.Queue[tuple[str, list[str]]] = queue.Queue()
        self._stopped = False
        self._guard = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="cairn-enrichment", daemon=True)
        self._thread.start()

    def submit(self, team: str, event_ids: Sequence[str]) -> None:
        with self._guard:
            if self._stopped:
                return  # stored, searchable as events; enriched after the next start's ingest
            ids = list(event_ids)
            # In slices, so a stop waits for one slice, not for a 500-event batch (a team's
            # slices run in order; later ones join the sessions the earlier ones opened).
            for start in range(0, len(ids), SLICE_EVENTS):
                self._jobs.put((team, ids[start : start + SLICE_EVENTS]))

    def drain(self) -> None:
        self._jobs.join()

    def stop(self, timeout: float = STOP_SECONDS) -> None:
        with self._guard:
            if self._stopped:
                return
            self._stopped = True
            abandoned = _abandon(self._jobs)
            self._jobs.put(self._STOP)
        if abandoned:
            # Stored, and searchable as events (search_events); not made into knowledge nodes.
            logger.warning(
                f"stopping: {len(abandoned)} queued enrichment slice(s) of "
                f"{sum(len(ids) for _, ids in abandoned)} event(s) left unenriched",
                extra={"batches": len(abandoned)},
            )
        self._thread.join(timeout)
        if self._thread.is_alive():
            logger.error(f"the enrichment worker did not end within {timeout:g} s of the stop")

    def _run(self) -> None:
        while True:
            team, ids = self._jobs.get()
            try:
                if (team, ids) == self._STOP:
                    return
                self._enrich(team, ids)
            except Exception:
                # The events are stored; a failed enrichment leaves them searchable as events.
                logger.exception("enrichment failed", extra={"team": team, "events": len(ids)})
            finally:
                self._jobs.task_done()


class UnconfiguredQueue:
    """DynamoDB storage without `CAIRN_KNOWLEDGE_QUEUE_URL`: events are stored (searchable by
    `search_events`) but nothing enriches them, and the log says why, once."""

    def __init__(self) -> None:
        self._warned = False

    def submit(self, team: str, event_ids: Sequence[str]) -> None:
        if not self._warned:
            self._warned = True
            logger.warning(
                "knowledge events stored but not enriched: set CAIRN_KNOWLEDGE_QUEUE_URL (the "
                "enrichment queue; the CDK stack sets it)"
            )


MAX_IDS_PER_MESSAGE = 500


class SqsQueue:
    """The enrichment worker's FIFO queue: one message group per team keeps a team's
    sessionizing in order and single-file (see the DynamoDB adapter's note)."""

    def __init__(self, client: Any, queue_url: str) -> None:
        self._client = client
        self._url = queue_url

    def submit(self, team: str, event_ids: Sequence[str]) -> None:
        import hashlib

        ids = list(event_ids)
        for start in range(0, len(ids), MAX_IDS_PER_MESSAGE):
            batch = ids[start : start + MAX_IDS_PER_MESSAGE]
            body = json.dumps({"team": team, "event_ids": batch})
            self._client.send_message(
                QueueUrl=self._url,
                MessageBody=body,
                MessageGroupId=team,
                MessageDeduplicationId=hashlib.sha256(body.encode()).hexdigest(),
            )
