"""`cairn bench cold`: each Lambda function's import time as a ratio to `import boto3`, and its
bundle's size.

Each round imports boto3 and every handler in fresh interpreters, with the environment a
deployed function has (`infra.imports.LAMBDA_ENVIRONMENT`) and, for the gateway, the tool
catalog its bundle carries; a handler's time includes what its module builds at init. The time
is the child's CPU time (user + system), up to the end of init (it leaves without shutting
down, as a Lambda container does), less that of an interpreter that imports nothing: on a
shared, loaded machine wall time mostly measures waiting for a core, unevenly. Bytecode is
compiled by a first, unmeasured round, as it is in the bundle. Ratios are taken within a round
and the median over rounds is printed. Sizes are of the bundles `infra.bundling` builds
(unzipped, bytecode included), one per distinct package set.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

BASELINE = "boto3"


def cpu_ms(code: str, environment: Mapping[str, str], cwd: Path) -> float:
    """CPU milliseconds (user + system) of a fresh interpreter running `code`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(  # noqa: S603
        [sys.executable, "-c", code],
        cwd=cwd,
        env=dict(environment),
        capture_output=True,
        text=True,
        check=False,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise RuntimeError(f"{code} failed:\n{result.stderr[-2000:]}")
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return used * 1000


# The child leaves without finalizing: a Lambda container is frozen or killed after its init,
# never shut down, and the collection a shutdown runs over everything init built (several
# milliseconds, more than the import's own collections for some functions) is not cold start.
_LEAVE: Final = "import os; os._exit(0)"


def import_ms(module: str, environment: Mapping[str, str], cwd: Path) -> float:
    """CPU milliseconds `import module` adds to a fresh interpreter."""
    return cpu_ms(f"import {module}\n{_LEAVE}", environment, cwd) - cpu_ms(_LEAVE, environment, cwd)


def _size(path: Path) -> tuple[float, int]:
    files = [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files) / 1_000_000, len(files)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="cairn bench cold", description=__doc__)
    parser.add_argument("--rounds", type=int, default=7, help="measured rounds (median)")
    parser.add_argument("--functions", default="", help="comma-separated (default: all)")
    parser.add_argument("--no-sizes", action="store_true", help="skip building the bundles")
    args = parser.parse_args(argv)

    from infra.bundling import FUNCTION_PACKAGES, GATEWAY, build, generate_catalog
    from infra.imports import ROOT, functions, handler_module, lambda_environment
    from shared.coldstart import INIT_TYPE_ENV

    names = [n for n in args.functions.split(",") if n] or functions()
    with tempfile.TemporaryDirectory() as tmp:
        catalog = Path(tmp) / "catalog.json"
        generate_catalog(catalog)
        environment = lambda_environment(catalog)
        modules = {BASELINE: BASELINE, **{name: handler_module(name) for name in names}}
        # As Lambda initializes each: the gateway from its SnapStart snapshot, the rest on
        # demand (which defers their pydantic model builds: shared/coldstart.py).
        environments = {
            name: {**environment, INIT_TYPE_ENV: "snap-start" if name == GATEWAY else "on-demand"}
            for name in modules
        }
        for name, module in modules.items():  # compiles the bytecode, unmeasured
            import_ms(module, environments[name], ROOT)
        times: dict[str, list[float]] = {name: [] for name in modules}
        ratios: dict[str, list[float]] = {name: [] for name in names}
        for _ in range(args.rounds):
            baseline = import_ms(BASELINE, environments[BASELINE], ROOT)
            times[BASELINE].append(baseline)
            for name in names:
                took = import_ms(modules[name], environments[name], ROOT)
                times[name].append(took)
                ratios[name].append(took / baseline)

        sizes: dict[str, tuple[float, int]] = {}
        if not args.no_sizes:
            built: dict[tuple[frozenset[str], bool], tuple[float, int]] = {}
            for name in names:
                key = (FUNCTION_PACKAGES[name], name == GATEWAY)
                if key not in built:
                    out = Path(tmp) / f"bundle-{len(built)}"
                    build(out, key[0], catalog=key[1])
                    built[key] = _size(out)
                sizes[name] = built[key]

    load = os.getloadavg()
    print(
        f"cold import vs `import {BASELINE}`: CPU time, median of {args.rounds} rounds, fresh "
        f"interpreters, bytecode compiled; load average {load[0]:.1f} / {load[1]:.1f} on "
        f"{os.cpu_count()} cores"
    )
    print(f"  {BASELINE:<22} {statistics.median(times[BASELINE]):8.0f} ms     1.00x")
    for name in names:
        size = f"{sizes[name][0]:7.1f} MB {sizes[name][1]:6d} files" if name in sizes else ""
        print(
            f"  {name:<22} {statistics.median(times[name]):8.0f} ms  "
            f"{statistics.median(ratios[name]):5.2f}x  {size}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
