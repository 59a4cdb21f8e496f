"""One process owns a data folder: an exclusive `flock` on `<data_dir>/server.lock`, held for
the life of the `LocalRuntime` that took it (`cairn serve`, or `cairn index` writing the folder
directly when no server runs).

The kernel releases the lock when its holder exits, however it exits (Ctrl-C, SIGKILL, a
crash), so a stale lock file never keeps the next server out. The holder's pid is written into
the file, for the refusal to name it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

LOCK_FILE = "server.lock"


class FolderInUse(Exception):
    """Another process holds the data folder; `pid` (and `port`, when it serves) say which."""

    def __init__(self, data_dir: Path, pid: int | None, port: int | None) -> None:
        self.data_dir = data_dir
        self.pid = pid
        self.port = port
        who = f"pid {pid}" if pid else "another process"
        where = f", serving http://127.0.0.1:{port}/mcp" if port else ""
        super().__init__(
            f"the data folder {data_dir} is in use by a cairn server ({who}{where}): one "
            f"server per data folder. Use that server, stop it first, or set CAIRN_DATA_DIR "
            f"to another folder"
        )


class FolderLock:
    """The exclusive lock of one data folder.

    >>> lock = FolderLock(data_dir)      # doctest: +SKIP
    >>> lock.acquire()                   # FolderInUse when another process holds it
    >>> lock.release()
    """

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock now or raise `FolderInUse` naming its holder (never waits)."""
        if self._fd is not None:
            return
        path = self.data_dir / LOCK_FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            pid = holder_pid(self.data_dir)
            raise FolderInUse(self.data_dir, pid, _port_of(self.data_dir, pid)) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        os.fsync(fd)
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def holder_pid(data_dir: Path) -> int | None:
    """The pid the lock's holder wrote, None when unreadable."""
    try:
        raw = (data_dir / LOCK_FILE).read_text().strip()
    except OSError:
        return None
    return int(raw) if raw.isdigit() else None


def _port_of(data_dir: Path, pid: int | None) -> int | None:
    from shared.local.discovery import read_record

    record = read_record(data_dir)
    return record.port if record is not None and record.pid == pid else None
