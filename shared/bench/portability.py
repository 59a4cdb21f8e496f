"""`cairn bench portability`: export and import speed (records/s) and peak memory of a team of
N records, on the embedded store.

Each phase runs in a fresh interpreter on a fresh data folder, so its peak RSS
(`ru_maxrss`) is its own: `baseline` only imports what the phases import and opens the
database; `import` imports a file of N handoff records (written by the parent, a realistic
~1 KB record each) through `Portability.import_file`; `export` streams the same team back to a
file. Flat memory means the peak over the baseline stays about the same from 10k to 100k.
The search index is left out (`with_index=False`): a rebuild is embedding, measured by
`cairn bench index`. Wall-clock rates on a loaded machine mostly measure waiting for a core;
the rates per CPU-second (user + system of the phase) are the steadier figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

TEAM = "bench"
DOCUMENT = (
    "## Start & intent\nMove the ingest job to the new queue.\n\n## Journey\n"
    + "Tried the old consumer, then the batch path. " * 8
    + "\n\n## Current state\nHalf moved.\n\n## What’s left\nThe retry path.\n\n"
    "## Open questions\nNone.\n"
)


def write_export(path: Path, records: int) -> None:
    """An export file of `records` handoffs of team `bench`, as the SQLite store exports them."""
    from shared.handoffs.adapters.sqlite import SqliteHandoffStore
    from shared.handoffs.models import Handoff
    from shared.portability.format import end_line, header, line

    columns = ("id", "status", "created_at", "project_key", "cwd", "harness", "record")
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with path.open("w") as stream:
        stream.write(line(header(TEAM, "sqlite")))
        for number in range(records):
            handoff = Handoff(
                id=f"hof_{number:012d}",
                title=f"handoff {number}",
                document_md=DOCUMENT,
                created_by="bench",
                created_at=start + timedelta(seconds=number),
                status="open",
                project_key="bench",
            )
            row = SqliteHandoffStore._row(TEAM, handoff)[1:]  # the store's own row
            stream.write(line({"kind": "handoffs", "row": dict(zip(columns, row, strict=True))}))
        stream.write(end_line(records))


def _phase(phase: str, data_dir: Path, file: Path) -> dict[str, float]:
    """One phase in this (fresh) process: its seconds and peak RSS in MiB."""
    from shared import runtime
    from shared.config.settings import Settings
    from shared.portability.wiring import build_portability

    runtime.configure(Settings(environment="local", storage="sqlite", data_dir=data_dir))
    portability = build_portability(with_index=False)
    started = time.perf_counter()
    cpu_before = resource.getrusage(resource.RUSAGE_SELF)
    count = 0
    if phase == "import":
        count = portability.import_file(file).written
    elif phase == "export":
        with file.open("w") as stream:
            for text in portability.export(TEAM):
                stream.write(text)
                count += 1
        count -= 2
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (usage.ru_utime - cpu_before.ru_utime) + (usage.ru_stime - cpu_before.ru_stime)
    return {"seconds": seconds, "cpu": cpu, "records": count, "peak_mib": usage.ru_maxrss / 1024}


def _child(phase: str, data_dir: Path, file: Path) -> dict[str, float]:
    done = subprocess.run(  # noqa: S603
        [
            sys.executable,
            "-m",
            "shared.bench.portability",
            "--phase",
            phase,
            str(data_dir),
            str(file),
        ],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "POWERTOOLS_METRICS_DISABLED": "true"},
    )
    if done.returncode != 0:
        raise RuntimeError(f"{phase} failed:\n{done.stderr[-3000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run(sizes: Sequence[int]) -> list[dict[str, float]]:
    rows: list[dict[str, float]] = []
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="cairn-bench-portability-") as folder:
            base = Path(folder)
            source = base / "in.jsonl"
            write_export(source, size)
            data_dir = base / "data"
            baseline = _child("baseline", data_dir, source)
            imported = _child("import", data_dir, source)
            exported = _child("export", data_dir, base / "out.jsonl")
            again = _child("import", data_dir, source)
            if imported["records"] != size or exported["records"] != size or again["records"]:
                raise RuntimeError(f"counts differ at {size}: {imported}, {exported}, {again}")
            rows.append(
                {
                    "records": size,
                    "file_mib": source.stat().st_size / 2**20,
                    "import_per_s": size / imported["seconds"],
                    "export_per_s": size / exported["seconds"],
                    "import_per_cpu_s": size / imported["cpu"],
                    "export_per_cpu_s": size / exported["cpu"],
                    "reimport_per_s": size / again["seconds"],
                    "baseline_mib": baseline["peak_mib"],
                    "import_peak_mib": imported["peak_mib"],
                    "export_peak_mib": exported["peak_mib"],
                }
            )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cairn bench portability", description=__doc__)
    parser.add_argument(
        "--sizes", default="10000,100000", help="team sizes in records (default 10000,100000)"
    )
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("paths", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:
        print(json.dumps(_phase(args.phase, Path(args.paths[0]), Path(args.paths[1]))))
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    load = os.getloadavg()[0]
    print(
        f"{'records':>8} {'file MiB':>8} {'import/s':>9} {'export/s':>9} {'re-import/s':>11} "
        f"{'import/CPU-s':>12} {'export/CPU-s':>12} "
        f"{'baseline MiB':>12} {'import MiB':>10} {'export MiB':>10}"
    )
    for row in run(sizes):
        print(
            f"{row['records']:>8.0f} {row['file_mib']:>8.1f} {row['import_per_s']:>9,.0f} "
            f"{row['export_per_s']:>9,.0f} {row['reimport_per_s']:>11,.0f} "
            f"{row['import_per_cpu_s']:>12,.0f} {row['export_per_cpu_s']:>12,.0f} "
            f"{row['baseline_mib']:>12.1f} {row['import_peak_mib']:>10.1f} "
            f"{row['export_peak_mib']:>10.1f}"
        )
    print(f"(load average {load:.1f} at start, {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
