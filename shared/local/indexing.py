"""`cairn index`: into the running local server if there is one, else into the data folder.

The server is found the way every CLI command finds it (`shared.local.discovery`). Through a
server the indexing runs in the server process, which streams its progress back as NDJSON
lines (`shared.local.progress`); without one it runs in this process. Either way the user sees
the same progress: a bar per stage on a terminal, plain lines otherwise (`ProgressDisplay`).
"""

from __future__ import annotations

import shutil
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO, Any

from shared.connectors.local_files import Progress, ProgressCallback
from shared.local.discovery import LocalServer, TargetNotFound, find_local_server
from shared.local.folder_lock import FolderInUse
from shared.local.layout import NDJSON, default_data_dir
from shared.local.progress import ProgressFailed, failure_detail, read_progress
from shared.local.runtime import IndexRequest, LocalRuntime

_STAGE_UNITS = {"files": "files", "embedding": "chunks", "cleanup": "documents"}


class IndexingFailed(Exception):
    """Indexing failed; the message says why."""


class ProgressDisplay:
    """Shows `Progress` on stderr: tqdm bars on a terminal, a plain line per step otherwise.

    Plain lines are printed at each tenth of a stage and at its end, so a log stays short.
    """

    def __init__(self, stream: IO[str] | None = None) -> None:
        self._stream = stream or sys.stderr
        self._tty = self._stream.isatty()
        self._bars: dict[str, Any] = {}
        self._printed: dict[str, int] = {}

    def __call__(self, progress: Progress) -> None:
        unit = _STAGE_UNITS.get(progress.stage, "items")
        if self._tty:
            from tqdm import tqdm

            bar = self._bars.get(progress.stage)
            if bar is None:
                bar = tqdm(
                    total=progress.total,
                    desc=f"{progress.stage:<9}",
                    unit=f" {unit}",
                    file=self._stream,
                    # A terminal that reports no size (some ptys) would get blank lines.
                    ncols=shutil.get_terminal_size().columns,
                    nrows=shutil.get_terminal_size().lines,
                )
                self._bars[progress.stage] = bar
            bar.total = progress.total
            bar.n = progress.done
            bar.refresh()
            return
        step = max(progress.total // 10, 1)
        last = self._printed.get(progress.stage)
        finished = progress.done >= progress.total
        if last is None or progress.done >= last + step or (finished and last != progress.done):
            self._printed[progress.stage] = progress.done
            print(
                f"{progress.stage}: {progress.done}/{progress.total} {unit}",
                file=self._stream,
                flush=True,
            )

    def close(self) -> None:
        """Finish the bars (a terminal's cursor ends below them)."""
        for bar in self._bars.values():
            bar.close()


def _through_server(
    server: LocalServer, request: IndexRequest, progress: ProgressCallback
) -> dict[str, Any]:
    http_request = server.request("POST", "/_local/index", request.model_dump_json())
    http_request.add_header("Accept", NDJSON)
    try:
        with urllib.request.urlopen(http_request, timeout=3600) as response:  # noqa: S310
            stats = read_progress(response, progress)
    except urllib.error.HTTPError as exc:
        raise IndexingFailed(server.reason(exc)) from exc
    except ProgressFailed as exc:
        raise IndexingFailed(str(exc)) from exc
    if stats is not None:
        return stats
    raise IndexingFailed(f"the server on port {server.port} stopped before indexing finished")


def index_folder(
    path: str, *, team: str, source: str, progress: ProgressCallback | None = None
) -> dict[str, Any]:
    """Index `path` for `team`; returns the connector's stats (scanned, indexed, unchanged, …)."""
    report: ProgressCallback = progress or (lambda _: None)
    request = IndexRequest(path=str(Path(path).expanduser().resolve()), team=team, source=source)
    data_dir = default_data_dir()
    try:
        server = find_local_server(data_dir)
    except TargetNotFound as exc:
        raise IndexingFailed(str(exc)) from exc
    if server is not None:
        return _through_server(server, request, report)
    # No server: open the data folder in this process just long enough to index, holding its
    # lock meanwhile. A server that holds it but did not answer (starting, or on a port not
    # recorded) is named rather than written under.
    local = LocalRuntime(data_dir)
    try:
        local.start()
    except FolderInUse as exc:
        raise IndexingFailed(
            f"cannot index directly: {exc}; run `cairn index` again once it answers, and it "
            "goes through that server"
        ) from exc
    try:
        return local.index(request, report)
    except Exception as exc:
        if getattr(exc, "detail", None):
            raise IndexingFailed(failure_detail(exc)) from exc
        raise
    finally:
        local.stop()
