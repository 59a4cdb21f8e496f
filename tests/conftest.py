"""Fixtures shared by every test layer."""

from __future__ import annotations

import os

import pytest

# Tests never reach a real AWS account, whatever the developer's shell exports.
for _key, _value in {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "POWERTOOLS_METRICS_DISABLED": "true",
    "POWERTOOLS_TRACE_DISABLED": "true",
}.items():
    os.environ[_key] = _value
os.environ.pop("AWS_PROFILE", None)

# `make test` runs the suite on several workers (pytest-xdist). Each gets its own temp folder,
# so what code puts under the temp dir by a fixed name (the search index of a process without a
# data folder) is never shared between two workers, or with their servers.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if _WORKER:
    import atexit
    import shutil
    import tempfile

    os.environ["TMPDIR"] = tempfile.tempdir = tempfile.mkdtemp(prefix=f"cairn-tests-{_WORKER}-")
    # A worker's folder is its own, so it goes with the worker (a run left ~50 of them behind).
    atexit.register(shutil.rmtree, tempfile.tempdir, ignore_errors=True)


# The whole-tree type check is the suite's longest file (~100-150 s of one worker from a fresh
# clone, where mypy has no cache) and has two tests. pytest-xdist would send it last (it starts
# the files with most tests first), so the other worker sat idle for its final minutes; it
# starts first instead, and the many short unit files (last in collection order) even out the
# end. `make test` passes --no-loadscope-reorder so that this order is kept.
FIRST = "tests/test_static_checks.py"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: not item.nodeid.startswith(FIRST))  # stable: the rest keep order
