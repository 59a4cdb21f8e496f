"""The export file's reader: a bad file is refused at its first bad line, by number."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shared.portability.format import (
    FORMAT_VERSION,
    ExportReader,
    FormatError,
    end_line,
    header,
    line,
)


def write(path: Path, *lines: str) -> Path:
    path.write_text("".join(lines))
    return path


def whole(tmp_path: Path) -> list[str]:
    return [
        line(header("alpha", "sqlite")),
        line({"kind": "handoffs", "row": {"id": "h1"}}),
        line({"kind": "tasks", "row": {"id": "t1"}}),
        end_line(2),
    ]


def read_all(path: Path) -> list[tuple[int, dict[str, object]]]:
    return list(ExportReader(path).records())


def test_a_whole_file_reads_back_with_line_numbers(tmp_path: Path) -> None:
    path = write(tmp_path / "f.jsonl", *whole(tmp_path))
    reader = ExportReader(path)
    assert reader.header["team"] == "alpha"
    assert reader.header["format_version"] == FORMAT_VERSION
    assert [(n, r["kind"]) for n, r in reader.records()] == [(2, "handoffs"), (3, "tasks")]


def test_a_line_cut_in_the_middle_is_refused_at_its_number(tmp_path: Path) -> None:
    lines = whole(tmp_path)
    path = write(tmp_path / "f.jsonl", *lines[:2], lines[2][:10])
    with pytest.raises(FormatError, match=r"line 3: .*truncated") as refused:
        read_all(path)
    assert refused.value.line == 3


def test_a_file_cut_at_a_line_end_is_told_by_its_missing_end_line(tmp_path: Path) -> None:
    path = write(tmp_path / "f.jsonl", *whole(tmp_path)[:3])
    with pytest.raises(FormatError, match=r"line 4: .*without its end line"):
        read_all(path)


def test_a_corrupt_line_is_named(tmp_path: Path) -> None:
    lines = whole(tmp_path)
    path = write(tmp_path / "f.jsonl", lines[0], "{not json}\n", *lines[2:])
    with pytest.raises(FormatError, match="line 2: not a JSON object"):
        read_all(path)
    path = write(tmp_path / "g.jsonl", lines[0], '{"row": 1}\n', *lines[2:])
    with pytest.raises(FormatError, match="line 2: a record needs `kind`"):
        read_all(path)


def test_an_end_line_whose_count_differs_is_refused(tmp_path: Path) -> None:
    lines = whole(tmp_path)
    path = write(tmp_path / "f.jsonl", lines[0], lines[1], lines[3])
    with pytest.raises(FormatError, match="line 3: the end line counts 2 records, the file 1"):
        read_all(path)


def test_a_future_format_version_is_refused_naming_it(tmp_path: Path) -> None:
    future = {**header("alpha", "sqlite"), "format_version": FORMAT_VERSION + 1}
    future["cairn_version"] = "9.0.0"
    path = write(tmp_path / "f.jsonl", json.dumps(future) + "\n", end_line(0))
    with pytest.raises(FormatError, match=f"format_version {FORMAT_VERSION + 1} .*cairn 9.0.0"):
        ExportReader(path)


def test_something_else_than_an_export_is_refused_at_line_one(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="line 1: the file is empty"):
        ExportReader(write(tmp_path / "e.jsonl"))
    with pytest.raises(FormatError, match="line 1: not a cairn team export"):
        ExportReader(write(tmp_path / "o.jsonl", '{"format": "other"}\n'))
