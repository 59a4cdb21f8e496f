"""The `folder` and `obsidian` kinds: a folder of this machine (local mode), e.g. an Obsidian
vault. `.obsidian/`, `.trash/` and hidden files are never read; a file's version is its size
and modification time, so an unchanged file is not read again."""

from __future__ import annotations

import os
from pathlib import Path

from shared.connectors.documents import matches, skipped_path
from shared.connectors.models import ConnectorError, Fetched, FolderSettings, Listing, SourceItem


class FolderSource:
    """`Source` over the files under one folder."""

    def __init__(self, settings: FolderSettings) -> None:
        self._settings = settings
        self._root = Path(settings.path).expanduser()

    def list(self, cursor: str | None) -> Listing | None:
        root = self._root
        if not root.is_dir():
            raise ConnectorError(f"the folder {root} does not exist (or is not a folder)")
        items: list[SourceItem] = []
        hidden = 0
        for folder, subfolders, files in os.walk(root):
            relative = Path(folder).relative_to(root).as_posix()
            prefix = "" if relative == "." else relative + "/"
            # Pruned in place: a skipped folder's files are never walked.
            kept = sorted(d for d in subfolders if not skipped_path(d))
            hidden += len(subfolders) - len(kept)
            subfolders[:] = kept
            for name in sorted(files):
                path = prefix + name
                if skipped_path(name):
                    hidden += 1
                    continue
                if not matches(path, self._settings.globs):
                    continue
                full = Path(folder) / name
                try:
                    info = full.stat()
                except OSError:
                    continue  # gone since the walk saw it
                items.append(
                    SourceItem(
                        id=path,
                        version=f"{info.st_size}:{info.st_mtime_ns}",
                        size=info.st_size,
                        uri=full.resolve().as_uri(),
                    )
                )
        return Listing(items=items, skipped={"hidden": hidden})

    def read(self, item: SourceItem, known: str | None) -> Fetched:
        try:
            data = (self._root / item.id).read_bytes()
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise ConnectorError(f"cannot read {item.id}: {reason}") from None
        return Fetched(data=data, version=item.version)

    def close(self) -> None:
        return None
