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


# The files that take longest (servers in subprocesses, CDK synths, the real embedder through
# moto) run first, so that no worker starts one of them while the other has finished: with a
# file per worker at a time, a long file picked up last is the run's tail. A file's own tests
# keep their order (the sort is stable); `make test` passes --no-loadscope-reorder so that
# pytest-xdist keeps this order instead of its own (most tests first).
LONGEST_FIRST = (
    "tests/e2e/",
    "tests/infra/test_bundles.py",
    "tests/functional/test_recall_ranking.py",
    "tests/infra/test_policy.py",
    "tests/unit/storage/test_document_store_contract.py",
    "tests/functional/test_memory_tools.py",
    "tests/unit/test_coldstart.py",
    "tests/functional/test_session_tools.py",
    "tests/infra/",
    "tests/protocol/test_smoke_script.py",
    "tests/protocol/test_security.py",
    "tests/protocol/test_conformance.py",
    "tests/console/test_console_review.py",
    "tests/functional/test_memory_lifecycle.py",
    "tests/unit/storage/test_memory_store_contract.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]
        for place, prefix in enumerate(LONGEST_FIRST):
            if path.startswith(prefix):
                return place
        return len(LONGEST_FIRST)

    items.sort(key=rank)
