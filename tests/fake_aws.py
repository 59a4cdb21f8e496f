"""moto for the tests that need AWS: a fresh moto per test, cairn's tables ready at no cost.

`fake_aws()` is `mock_aws()` with two costs taken out of every test, and its isolation kept:

- moto's `start` resets every backend, as before, so no test sees another's items, queues, buses
  or state machines. The tables are then put back from a template: the eight tables are created
  once per process through the DynamoDB API (`shared.config.tables.create_tables`, as the CDK
  stack defines them), and each test gets deep copies of those still-empty tables (well under a
  millisecond, where creating them took 0.15-0.3 s). `tests/functional/test_tables.py` checks
  the copies against the definitions through `describe_table`.
- moto resets boto3's default session at each start by default, so each test's first client
  loaded the service models again (0.3-0.9 s on this machine). The session is kept instead
  (moto's `core.reset_boto3_session` setting): its clients are moto's while a mock is active,
  and the credentials it holds are the fake ones `tests/conftest.py` and moto set.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
from moto import mock_aws
from moto.core.config import DefaultConfig
from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends

from shared.config.tables import ALL_TABLES, create_tables, physical_name

REGION = "us-east-1"
KEEP_BOTO3_SESSION: DefaultConfig = {"core": {"reset_boto3_session": False}}

# Per region: moto's table objects as `create_tables` left them, never handed to a test.
_templates: dict[str, dict[str, Any]] = {}


@contextmanager
def fake_aws(
    config: DefaultConfig | None = None, *, tables: bool = True, region: str = REGION
) -> Iterator[None]:
    """moto for every AWS API, reset on entry; with `tables`, cairn's tables exist and are empty.

    `config` is moto's own (e.g. `{"stepfunctions": {"execute_state_machine": True}}`).
    """
    with mock_aws(config={**KEEP_BOTO3_SESSION, **(config or {})}):
        if tables:
            _install_tables(region)
        yield


def _install_tables(region: str) -> None:
    backend = dynamodb_backends[DEFAULT_ACCOUNT_ID][region]
    template = _templates.get(region)
    if template is None:
        create_tables(boto3.client("dynamodb", region_name=region))
        names = {physical_name(spec) for spec in ALL_TABLES}
        assert names <= set(backend.tables), "moto put the tables in another account"
        _templates[region] = template = copy.deepcopy(dict(backend.tables))
        return
    backend.tables.update(copy.deepcopy(template))
