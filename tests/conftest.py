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


# `make test` hands whole files to its workers (xdist --dist loadfile) in collection order
# (--no-loadscope-reorder). The files that start servers, browsers and type checkers go first
# and the quick unit tests last, so a run ends on small pieces on every worker instead of one
# worker finishing a 30-second end-to-end test while the others wait.
_FIRST_TO_LAST = (
    "tests/e2e/",
    "tests/test_static_checks.py",
    "tests/infra/",
    "tests/protocol/",
    "tests/console/",
    "tests/functional/",
    "tests/unit/",
)


def _rank(item: pytest.Item) -> int:
    return next(
        (i for i, prefix in enumerate(_FIRST_TO_LAST) if item.nodeid.startswith(prefix)),
        len(_FIRST_TO_LAST),
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_rank)  # stable: a file's tests keep their order
