"""Local state that survives a restart: moto's DynamoDB tables snapshotted to the data folder.

moto keeps everything in memory. After every write the local invoker marks the state dirty; a
background thread writes a snapshot (atomically: temp file + rename) at most every half second,
and shutdown writes a final one.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

SNAPSHOT_FILE = "dynamodb.json"
# Rate-limit counters are per-minute scratch state: not worth keeping across restarts.
_EPHEMERAL_PREFIXES = ("RATE#",)


class TableSnapshots:
    """Save and restore the items of a set of tables through a (moto-backed) DynamoDB client."""

    def __init__(self, client: Any, tables: Iterable[str], directory: Path) -> None:
        self._client = client
        self._tables = list(tables)
        self._path = directory / SNAPSHOT_FILE

    def save(self) -> None:
        snapshot: dict[str, list[dict[str, Any]]] = {}
        for table in self._tables:
            items: list[dict[str, Any]] = []
            kwargs: dict[str, Any] = {"TableName": table}
            while True:
                page = self._client.scan(**kwargs)
                items.extend(
                    item
                    for item in page.get("Items", [])
                    if not item.get("pk", {}).get("S", "").startswith(_EPHEMERAL_PREFIXES)
                )
                if "LastEvaluatedKey" not in page:
                    break
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
            snapshot[table] = items
        temporary = self._path.with_suffix(".tmp")
        temporary.write_text(json.dumps(snapshot))
        os.replace(temporary, self._path)

    def restore(self) -> int:
        """Load the last snapshot into the (empty) tables; returns the number of items."""
        if not self._path.exists():
            return 0
        snapshot: dict[str, list[dict[str, Any]]] = json.loads(self._path.read_text())
        restored = 0
        for table, items in snapshot.items():
            if table not in self._tables:
                continue
            for start in range(0, len(items), 25):
                batch = [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]
                self._client.batch_write_item(RequestItems={table: batch})
                restored += len(batch)
        return restored


class SnapshotWriter:
    """Debounced background saving: `mark_dirty` after writes, `close` on shutdown."""

    def __init__(self, snapshots: TableSnapshots, lock: threading.RLock, interval: float = 0.5):
        self._snapshots = snapshots
        self._lock = lock
        self._interval = interval
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cairn-snapshots", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def mark_dirty(self) -> None:
        self._dirty.set()

    def flush(self) -> None:
        with self._lock:
            self._dirty.clear()
            self._snapshots.save()

    def _run(self) -> None:
        while not self._stop.is_set():
            if self._dirty.wait(timeout=self._interval) and not self._stop.is_set():
                self.flush()
                self._stop.wait(self._interval)

    def close(self) -> None:
        self._stop.set()
        self._dirty.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self.flush()
