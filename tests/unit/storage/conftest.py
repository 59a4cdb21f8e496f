"""Backends for the storage contract suites: every store's adapters against the same tests.

`backend` is parametrized: `dynamodb` (the AWS adapter on moto, its tables made from the CDK's
definitions, fresh for each test: `tests.fake_aws`) and `sqlite` (the embedded adapter on a
database file in tmp_path). A contract test asks `backend.open(...)` for the store under test, so
the same inputs run on both.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from shared import runtime
from shared.config.settings import Settings
from shared.storage.sqlite import Database
from tests.fake_aws import fake_aws


@dataclass
class Backend:
    """One storage backend, configured for `shared.runtime` (what the wiring modules read)."""

    name: str
    settings: Settings
    path: Path

    @property
    def is_sqlite(self) -> bool:
        return self.name == "sqlite"

    def database(self) -> Database:
        """A fresh connection set on the same file: what a second process would open."""
        return Database(self.path / "cairn.db")

    def table(self, logical_id: str) -> Any:
        return runtime.table(logical_id)


@pytest.fixture(params=[pytest.param("dynamodb", marks=pytest.mark.moto), "sqlite"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        settings = Settings(environment="test", storage="sqlite", data_dir=tmp_path)
        runtime.configure(settings)
        yield Backend("sqlite", settings, tmp_path)
        runtime.configure(Settings())
        return
    with fake_aws():
        settings = Settings(environment="test", storage="dynamodb", data_dir=tmp_path)
        runtime.configure(settings)
        yield Backend("dynamodb", settings, tmp_path)
        runtime.configure(Settings())
