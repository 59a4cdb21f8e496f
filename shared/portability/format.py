"""The export file: JSON Lines, a header, one line per record, an end line (docs/portability.md).

The end line carries the record count, so a file cut short at a line boundary is told from a
whole one; a line cut in the middle is not JSON. Either way the reader names the first bad line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import IO, Any

FORMAT = "cairn-team-export"
# 2: every record is the embedded store's row, whichever backend exported it (1: a DynamoDB
# export held its items; still read, into DynamoDB only).
FORMAT_VERSION = 2
END_KIND = "end"


class FormatError(Exception):
    """The file is not a readable export; `line` is the first bad line (1-based)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


def cairn_version() -> str:
    try:
        return metadata.version("cairn")
    except metadata.PackageNotFoundError:
        return "unknown"


def header(team: str, backend: str) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "cairn_version": cairn_version(),
        "team": team,
        "backend": backend,
        "exported_at": datetime.now(UTC).isoformat(),
    }


def line(value: dict[str, Any]) -> str:
    """One JSON Lines line (compact, UTF-8 as is)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"


def end_line(records: int) -> str:
    return line({"kind": END_KIND, "records": records})


class ExportReader:
    """Reads an export file: `header` at once, then `records()` (line number, record).

    `records()` raises `FormatError` at the first line that is not a record, and at the end when
    the end line is missing or its count differs. Reading twice (`records()` again) is how the
    importer checks a whole file before it writes anything, in constant memory.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        with path.open("rb") as stream:
            first = stream.readline()
        self.header = _header(first)

    def records(self) -> Iterator[tuple[int, dict[str, Any]]]:
        with self.path.open("rb") as stream:
            yield from _records(stream)


def _parse(raw: bytes, number: int) -> dict[str, Any]:
    if not raw.endswith(b"\n"):
        raise FormatError(number, "the line is cut short (no line end): the file is truncated")
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise FormatError(number, f"not a JSON object ({exc})") from exc
    if not isinstance(value, dict):
        raise FormatError(number, "not a JSON object")
    return value


def _header(raw: bytes) -> dict[str, Any]:
    if not raw:
        raise FormatError(1, "the file is empty: an export starts with its header line")
    value = _parse(raw, 1)
    if value.get("format") != FORMAT:
        raise FormatError(1, f"not a cairn team export (`format` is {value.get('format')!r})")
    version = value.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise FormatError(1, "`format_version` must be a whole number")
    if version > FORMAT_VERSION:
        raise FormatError(
            1,
            f"format_version {version} is newer than this cairn reads ({FORMAT_VERSION}); "
            f"the file was written by cairn {value.get('cairn_version', '?')}: upgrade cairn",
        )
    for field in ("team", "backend"):
        if not isinstance(value.get(field), str) or not value[field]:
            raise FormatError(1, f"the header lacks `{field}`")
    return value


def _records(stream: IO[bytes]) -> Iterator[tuple[int, dict[str, Any]]]:
    stream.readline()  # the header, read by the constructor
    number, count, ended = 1, 0, False
    for raw in stream:
        number += 1
        if ended:
            raise FormatError(number, "a line after the end line")
        value = _parse(raw, number)
        kind = value.get("kind")
        if not isinstance(kind, str) or not kind:
            raise FormatError(number, "a record needs `kind`, a string")
        if kind == END_KIND:
            if value.get("records") != count:
                raise FormatError(
                    number,
                    f"the end line counts {value.get('records')!r} records, the file {count}",
                )
            ended = True
            continue
        count += 1
        yield number, value
    if not ended:
        raise FormatError(number + 1, "the file ends without its end line: it is truncated")
